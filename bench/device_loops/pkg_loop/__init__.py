"""A package whose training entry point is run with `-m pkg_loop.train` (relative imports)."""
