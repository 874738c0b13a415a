"""LibCST's parse of text CPython has accepted, without LibCST's checks of each node it builds.

Every LibCST node checks itself when it is made (`CSTNode.__post_init__` calls `_validate`:
whitespace around keywords, balanced parentheses, no bytes beside a str literal). That guards
trees that code assembles by hand. A tree LibCST's own parser makes from text CPython has
accepted passes every check, and on users' code the checks are 14% of the parse (LibCST's
source marks them as a cost it would rather not pay on parsing). So they are off for the
parses of text CPython has compiled: the engine's of a linted file, and the model's of the
project's other files (`project._build`). Fixes, and text CPython rejected, are checked as
before. LibCST's nodes are built on one thread at a time (the language server's lint thread
builds them all).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import libcst as cst


def _checks_nothing(node: cst.CSTNode) -> None:
    return None


@contextlib.contextmanager
def nodes_unchecked() -> Iterator[None]:
    """Within the block, nodes LibCST builds skip their own checks; afterwards they check again."""
    node_class = cst.CSTNode
    checking = node_class.__dict__.get("__post_init__")
    if checking is None or checking is _checks_nothing:  # another LibCST, or already inside the block
        yield
        return
    node_class.__post_init__ = _checks_nothing  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        node_class.__post_init__ = checking  # type: ignore[method-assign]
