"""How users reach the engine: the CLI and its reporters, flake8, the language server."""
