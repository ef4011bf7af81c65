"""The version of ctxlab (pyproject.toml holds the same; tests/test_house.py checks they agree)."""
__version__ = "0.1.0"


__all__ = ["__version__"]
