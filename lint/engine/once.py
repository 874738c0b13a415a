"""Files linted once: their models are released as soon as the lint is done with them.

A file's model is full of reference cycles (each scope and its bindings, the model and its
analyses), and every node of the file's trees hangs from it, so only the cyclic collector
could free them: a full collection after every few files, each one walking all that was
garbage (measured: 15% of a cold run's CPU, and of the flake8 face's). Where nothing asks the
model anything once the file is linted (a run's worker turns findings into data, flake8 into
text), `linted_once` breaks the cycles on leaving (`Facts.release`) and refcounting frees the
trees there and then. An editor's document keeps its model for the next edit, outside any such
block; so do other files' models kept for their classes (odelint.analysis.project).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from odelint.analysis.facts import Facts

_open: list[list[Facts]] = []  # the models made inside each open block, innermost last


@contextlib.contextmanager
def linted_once() -> Iterator[None]:
    """Leaving the block releases the models made in it. Findings made inside must not be
    fixed afterwards (a fix is built from the model): turn them into data first."""
    models: list[Facts] = []
    _open.append(models)
    try:
        yield
    finally:
        _open.pop()
        for facts in models:
            facts.release()


def made(facts: Facts) -> None:
    """The engine made the model of a file it lints: released with the innermost open block, if any."""
    if _open:
        _open[-1].append(facts)
