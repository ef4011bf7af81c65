"""The worlds ``ctxlab.generate`` builds conversations in: e-commerce support, a SQL analytics
agent, and travel booking.

A world owns the random generator of one conversation and what it has made up so far (ids in use,
the clock). For each user turn it writes the request, then hands out one tool call at a time per
entity (an order, a question, a trip leg) with a made-up JSON result, and finally writes the answer,
citing ids from the results it actually returned. Results grow a list field (line items, rows,
offers, scan events) until they reach the requested size.

``base`` holds the shared ``World`` class and helpers; ``ecommerce``, ``sql`` and ``travel`` hold
one world each.
"""
from __future__ import annotations

from .base import CHARS_PER_TOKEN, JSONDict, Turn, World, dumps
from .ecommerce import EcommerceWorld
from .sql import SqlWorld
from .travel import TravelWorld

__all__ = ["BUILTIN_WORLDS", "CHARS_PER_TOKEN", "JSONDict", "Turn", "World", "dumps"]

BUILTIN_WORLDS: tuple[type[World], ...] = (EcommerceWorld, SqlWorld, TravelWorld)
"""The worlds ``ctxlab.generate`` offers, in the order shown to users."""
