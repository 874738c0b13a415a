"""The texts an editor's document rendered for its last lint, kept for the next one.

Messages quote the code they are about (`calls.text_of`, `calls.source_of`), and a re-lint
after each keystroke reports the same findings again, quoting the same nodes: rendering them
anew was 3.5% of a keystroke in the training script. A node the edit did not touch is the
same object in the new tree (odelint.engine.incremental), and the same node renders to the
same text under the same module settings (its default indent and newline). A file linted
once keeps nothing: only while `kept` is active are texts looked up and remembered.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

_Key = tuple[int, str, str]  # the node's id, the module's default indent and newline


class RenderedTexts:
    """One document's rendered texts: those of its last lint, and those of the lint running."""

    def __init__(self) -> None:
        self._last: dict[_Key, tuple[cst.CSTNode, str]] = {}
        self._now: dict[_Key, tuple[cst.CSTNode, str]] = {}

    def text(self, node: cst.CSTNode, module: cst.Module) -> str:
        key = (id(node), module.default_indent, module.default_newline)
        found = self._now.get(key) or self._last.get(key)
        if found is None or found[0] is not node:  # the node holds its id: an equal id is the same node
            found = (node, module.code_for_node(node))
        self._now[key] = found
        return found[1]

    def turn(self) -> None:
        """A lint has ended: what it rendered is what the next one may reuse; the rest is let go."""
        self._last, self._now = self._now, {}


_current: RenderedTexts | None = None


@contextlib.contextmanager
def kept(texts: RenderedTexts) -> Iterator[None]:
    """Within the block (one lint of an editor's document, on the one lint thread), texts are
    looked up in `texts` and remembered there."""
    global _current
    previous, _current = _current, texts
    try:
        yield
    finally:
        _current = previous
        texts.turn()


def render(node: cst.CSTNode, module: cst.Module) -> str:
    """`module.code_for_node(node)`, from the document's last lint where it rendered it."""
    return _current.text(node, module) if _current is not None else module.code_for_node(node)
