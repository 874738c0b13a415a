"""Verdicts of gitignore-style patterns on paths, remembered from one run to the next.

Whether a path matches a set of patterns follows from the two alone. So the result cache
keeps each verdict (`Cache.keep_verdicts`), and pathspec is imported, and the patterns
compiled, only for a path that no run has decided under the same patterns. In a repository
with the usual Python .gitignore, or under `per-file-ignores`, that import, compiling and
matching were a third of a run that answers from the cache.

The verdicts of one set of patterns are filed under `PLACE:DIGEST`. PLACE names where the
patterns come from (a chain of .gitignore folders, one configuration's per-file-ignores);
DIGEST names the patterns themselves. A run that finds a place's patterns changed drops the
verdicts filed under its old digest (`superseded`).
"""

from __future__ import annotations

from collections.abc import Callable

from odelint.files.digest import hexdigest

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TypeVar

    T = TypeVar("T")

Verdicts = dict[str, dict[str, object]]  # key -> path (as the patterns see it) -> verdict


def filed_under(place: str, patterns: str) -> str:
    """The key of the verdicts of `patterns` from `place`."""
    return f"{hexdigest(place.encode('utf-8', 'surrogateescape'))}:" \
           f"{hexdigest(patterns.encode('utf-8', 'surrogateescape'))}"


class Memo:
    """This run's verdicts: those remembered from earlier runs (`load`), those it decided."""

    def __init__(self) -> None:
        self._remembered: Verdicts = {}
        self.consulted: Verdicts = {}  # the sets this run looked in, with what it decided
        self.learned = False  # whether it decided any verdict no run had

    def load(self, remembered: Verdicts) -> None:
        self._remembered = remembered

    def recall(self, filed: str, path: str, decide: Callable[[], T],
               valid: Callable[[object], bool] = lambda verdict: type(verdict) is bool) -> T:
        """The verdict on `path` filed under `filed`: the one remembered, else (none, or a
        damaged one) `decide()`, kept from now on."""
        verdicts = self.consulted.get(filed)
        if verdicts is None:
            remembered = self._remembered.get(filed)
            verdicts = self.consulted[filed] = remembered if isinstance(remembered, dict) else {}
        verdict = verdicts.get(path)
        if not valid(verdict):
            verdict = verdicts[path] = decide()
            self.learned = True
        return verdict  # type: ignore[return-value]  # what `decide` returned, or `valid` accepted


def superseded(remembered: Verdicts, consulted: Verdicts) -> set[str]:
    """The remembered sets of verdicts whose place this run found with other patterns."""
    places = {filed.partition(":")[0] for filed in consulted}
    return {filed for filed in remembered if filed not in consulted and filed.partition(":")[0] in places}
