"""Shared test fixtures: where the real public data lives, and the sample conversations."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
SAMPLES = ROOT / "sample_data"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"real public data not found at {SHARED}")
