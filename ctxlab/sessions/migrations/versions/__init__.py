"""One module per schema revision (0001, 0002, ...)."""
