"""What kind of file a path is: Python, a notebook, a text file some rule reads, or none."""

from __future__ import annotations

import fnmatch
import os

from odelint.api.registry import file_patterns
from odelint.api.rule_index import PYTHON_FILES

PYTHON, NOTEBOOK, TEXT = "python", "notebook", "text"
PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")
NOTEBOOK_SUFFIX = ".ipynb"  # here, not in odelint.files.notebook: a warm run reads no notebook
NOT_LINTED = "not a Python file or notebook; skipped"


def kind_of(path: str) -> str | None:
    """None for a file odelint has nothing to say about (`notes.md`). A file without a
    suffix (`bin/train`) is a script: Python, as when it is named on the command line."""
    name = os.path.basename(path)
    if name.endswith(NOTEBOOK_SUFFIX):
        return NOTEBOOK
    if name.endswith(PYTHON_SUFFIXES):
        return PYTHON
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in file_patterns() if pattern not in PYTHON_FILES):
        return TEXT
    if "." not in name.lstrip("."):
        return PYTHON
    return None
