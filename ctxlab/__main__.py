"""``python -m ctxlab``: the same as the ``ctxlab`` command."""
import sys

from .cli import main

sys.exit(main())
