"""The ``ctxlab`` command line: a JSON contract scripts can rely on.

Exit codes: 0 success, 1 ``validate`` found errors, 2 bad input or usage (one line on stderr,
never a traceback). Each command group is a module that registers its commands with
:func:`ctxlab.cli.core.command`; the modules depend on the core, never on each other.
"""
from __future__ import annotations

# each module registers its commands; one per line so adding a command group is a one-line change
from . import config  # noqa: F401
from . import diagnose  # noqa: F401
from . import formats  # noqa: F401
from . import llm  # noqa: F401
from . import sessions  # noqa: F401
from . import strategies  # noqa: F401
from . import sweep  # noqa: F401
from . import tools  # noqa: F401
from .core import EXIT_BAD_INPUT, EXIT_INVALID, EXIT_OK, build_parser, main

__all__ = ["EXIT_BAD_INPUT", "EXIT_INVALID", "EXIT_OK", "build_parser", "main"]
