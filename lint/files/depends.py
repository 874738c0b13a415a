"""What cached results depend on: the project files a lint read (path -> [mtime_ns, size]), the
paths it looked up in vain (path -> None) and those it only needed to exist (path -> []).

A result holds while they do. Files of one package read much the same files, so each
(path, stamp) pair is stored once and each set of pairs (a group) once, and a run checks each
pair and each group once. Most pairs are modules an import might have named and that were not
there, many in folders that are not there either: an absent path is stored as its highest
absent folder, and answered from its folder's listing, each folder listed once per run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import Any

Stamp = Callable[[str], "list[int] | None"]
Recorded = dict[str, "list[int] | None"]
_CASELESS = sys.platform in ("darwin", "win32")  # file systems that find `Model.py` as `model.py`


def _is_stamp(recorded: object) -> bool:
    return recorded is None or isinstance(recorded, list) and all(type(part) is int for part in recorded)


def _hashable(recorded: list[int] | None) -> tuple[int, ...] | None:
    """A stamp as a key of the pairs' index ([] and None stay apart)."""
    return None if recorded is None else tuple(recorded)


def _split(path: str) -> tuple[str, str]:
    """`os.path.split` of an absolute, normalised path, without its generality (it runs for
    every path a warm run checks)."""
    if os.altsep:
        return os.path.split(path)
    folder, _, name = path.rpartition(os.sep)
    return folder or os.sep, name


class Dependencies:
    def __init__(self, paths: list, groups: list, stamp: Stamp) -> None:
        """`paths` and `groups` as a cache file stored them (checked where they are used: a
        damaged part makes a miss); `stamp` is how the model stamped the paths it read."""
        self.paths = paths  # [path, stamp]: each recorded pair once
        self.groups = groups  # indices into paths: each set of pairs once
        self._stamp = stamp
        # What this run found, each asked once: a path's stamp, a folder's names, a pair's and
        # a group's verdict.
        self._stamps: dict[str, list[int] | None] = {}
        self._listings: dict[str, frozenset[str] | None] = {}
        self._walked: dict[str, list[str]] = {}  # folders this run's discovery listed (`listed`)
        self._holds: dict[int, bool] = {}
        self._fresh: dict[int, bool] = {}
        self._pair_index: dict[tuple[str, tuple[int, ...] | None], int] | None = None  # built on the first `group`
        self._group_index: dict[tuple[int, ...], int] | None = None

    def unchanged(self, group: object) -> bool:
        """Do the project files of a stored group still have the stamps a result was made with?
        A path recorded as absent (None) must still be absent: a module created since would
        now answer; [] records only that a path existed (a root marker, a module found but not
        read)."""
        if type(group) is not int:
            return False
        fresh = self._fresh.get(group)
        if fresh is None:
            holds = self._holds
            members = self._members(group)
            fresh = members is not None
            for index in members or ():
                verdict = holds.get(index) if type(index) is int else False
                if verdict is None:
                    verdict = holds[index] = self._pair_holds(index)
                if not verdict:
                    fresh = False
                    break
            self._fresh[group] = fresh
        return fresh

    def listed(self, listings: dict[str, list[str]]) -> None:
        """The names in folders this run has already listed (its folder walk), by absolute
        path: each is not listed again."""
        self._walked = listings

    def recorded(self, group: object) -> Recorded:
        """path -> stamp of a stored group (empty for none or a damaged one)."""
        pairs = [self._pair(index) for index in self._members(group) or ()]
        return {} if None in pairs else dict(pair for pair in pairs if pair is not None)

    def union(self, groups: Iterable[object]) -> Recorded:
        """path -> stamp over stored groups, each pair read once however many groups hold it."""
        indices: set[int] = set()
        for group in set(groups):
            indices.update(index for index in self._members(group) or () if type(index) is int)
        return dict(pair for pair in map(self._pair, sorted(indices)) if pair is not None)

    def group(self, depends: Recorded) -> int:
        """The index of the group of these dependencies, added when new."""
        if self._pair_index is None or self._group_index is None:
            self._pair_index = {}
            for index in range(len(self.paths)):
                stored = self._pair(index)
                if stored is not None:
                    self._pair_index[(stored[0], _hashable(stored[1]))] = index
            self._group_index = {tuple(members): group for group, members in enumerate(self.groups)
                                 if isinstance(members, list) and all(type(index) is int for index in members)}
        indices = []
        for path, recorded in self._compressed(depends):
            pair = (path, _hashable(recorded))
            if pair not in self._pair_index:
                self._pair_index[pair] = len(self.paths)
                self.paths.append([path, recorded])
            indices.append(self._pair_index[pair])
        members = tuple(sorted(set(indices)))
        if members not in self._group_index:
            self._group_index[members] = len(self.groups)
            self.groups.append(list(members))
        return self._group_index[members]

    def compacted(self, used: Iterable[object]) -> tuple[dict[int, int], list, list]:
        """For writing: the groups `used` that are intact, renumbered (old index -> new), and the
        paths and groups they need, in their new numbering."""
        renumbered: dict[int, int] = {}
        groups: list[list[int]] = []
        pairs: dict[int, int] = {}  # a pair's old index -> its new one
        for group in used:
            if type(group) is not int or group in renumbered:
                continue
            members = self._members(group)
            if members is None or any(self._pair(index) is None for index in members):
                continue
            renumbered[group] = len(groups)
            groups.append([pairs.setdefault(index, len(pairs)) for index in members])
        return renumbered, [self.paths[index] for index in pairs], groups

    def _members(self, group: object) -> list[Any] | None:
        """The pairs' indices of a stored group (None for no such group)."""
        if type(group) is not int or not 0 <= group < len(self.groups):
            return None
        members = self.groups[group]
        return members if isinstance(members, list) else None

    def _pair(self, index: object) -> tuple[str, list[int] | None] | None:
        """A stored (path, stamp) pair (None for no such pair, or a damaged one)."""
        if type(index) is not int or not 0 <= index < len(self.paths):
            return None
        pair = self.paths[index]
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str) and _is_stamp(pair[1]):
            return pair[0], pair[1]
        return None

    def _pair_holds(self, index: int) -> bool:
        pair = self._pair(index)
        if pair is None:
            return False
        path, recorded = pair
        if recorded is None:
            return self._absent(path)
        found = self._stamps[path] if path in self._stamps else self._stamps.setdefault(path, self._stamp(path))
        return (found is not None) if recorded == [] else found == recorded

    def _compressed(self, depends: Recorded) -> Iterator[tuple[str, list[int] | None]]:
        """The same dependencies, each absent path replaced by its highest absent folder: the
        modules an import might have named under a folder that is not there (most of them)
        become one path, which holds only while that folder is still not there."""
        for path, recorded in depends.items():
            yield (self._highest_absent(path) if recorded is None else path), recorded

    def _highest_absent(self, path: str) -> str:
        """`path`, or the highest folder above it that is not there (so neither is `path`)."""
        while True:
            folder, name = _split(path)
            if folder == path or not name or not self._absent(folder):
                return path
            path = folder

    def _absent(self, path: str) -> bool:
        """Nothing at `path`, by its folder's listing."""
        folder, name = _split(path)
        if not name:  # a file system's root
            return False
        listing = self._listing(folder)
        if listing is None:
            return self._stamp(path) is None  # asked once: the pair's verdict is kept
        return (name.casefold() if _CASELESS else name) not in listing

    def _listing(self, folder: str) -> frozenset[str] | None:
        """The names in `folder` (empty when it is not a folder), None when it cannot be listed.
        A folder that its parent's listing lacks is not listed at all."""
        if folder in self._listings:
            return self._listings[folder]
        walked = self._walked.get(folder)
        if walked is not None:  # listed moments ago by this run's folder walk
            names: frozenset[str] | None = frozenset(each.casefold() if _CASELESS else each for each in walked)
            self._listings[folder] = names
            return names
        parent, name = _split(folder)
        names = frozenset()
        if parent != folder and name:
            above = self._listing(parent)
            if above is not None and (name.casefold() if _CASELESS else name) not in above:
                self._listings[folder] = names
                return names
        try:
            names = frozenset(each.casefold() if _CASELESS else each for each in os.listdir(folder))
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError:  # a folder that cannot be listed: its paths are asked one by one
            names = None
        self._listings[folder] = names
        return names
