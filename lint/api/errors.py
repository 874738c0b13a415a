"""The error every command reports as a usage mistake: one line, exit code 2."""


class UsageError(Exception):
    """A wrong flag or argument; the CLI prints it on one line and exits 2."""
