"""The `codemem` command line: the composition root above the core and its edges."""
