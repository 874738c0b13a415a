"""Per-file results keyed by content, file path and kind, odelint version, the rules' sources and
the target versions of the JAX stack, then by the enabled rules that could fire on the file.

A file's entry records which rules could report anything on it (`odelint.engine.relevance`:
those whose trigger words it holds and that look at its kind of file) and holds one result
per subset of those rules that was on. Turning a rule on or off therefore re-lints only the
files that pass its gate; every other file keeps its result, and a warm run computes no gate.

One JSON file per cache folder, read once at start and written atomically at the end (only
when something changed). Its layout keeps a warm run's work small:
- `files`: each file's content digest with the status it had (change time, modification
  time, size, inode), so an unchanged file is not read again;
- `paths` and `groups`: the project files that results depend on, each (path, stamp) once,
  and each set of them once (files of one package share their set), so a warm run checks
  each path once and each set once, not each file's list;
- `entries`: each records its `slot` (the file and the settings it answers for), so that a
  file's entry for contents it no longer has is dropped once a run has answered it anew, and
  an entry no run has used for a week is dropped too: the file stays the size of the project.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeGuard

from odelint import __version__
from odelint.api.registry import rules_digest
from odelint.files.fileio import NotRegular, read_regular, remove_stale_temporaries, temporary_name

CACHE_DIR = ".odelint_cache"
FORMAT = 2  # the layout above; a file of another layout reads as empty
MAX_ENTRIES = 100_000
REFRESH_SECONDS = 24 * 3600
# An entry no run has used for this long is dropped when the cache is written: each edit of a
# file leaves the entry of its old contents behind, and every warm run reads them all.
MAX_AGE_SECONDS = 7 * 24 * 3600
# A file changed less than this long before it was read might change again within the file
# system's timestamp granularity without its status changing: its digest is not kept (as git
# treats "racily clean" entries).
RACY_NS = 2 * 10**9
Stamp = Callable[[str], "list[int] | None"]
_CASELESS = sys.platform in ("darwin", "win32")  # file systems that find `Model.py` as `model.py`


def content(data: bytes) -> str:
    """A file's content digest."""
    return hashlib.sha256(data).hexdigest()


def key(data: bytes, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry, from its bytes."""
    return keyed(content(data), filename, kind, versions)


def keyed(digest: str, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry, from its content digest. `kind` says how the bytes were read (Python,
    a notebook, a text file); the rules' digest keeps a changed gate from answering for an old
    one, and `versions` (the target versions of the JAX stack) one computed for other versions.
    The file's folder is part of the key: the same train.py beside another model.py is another
    result. The name is keyed by its bytes, so a name that is not valid UTF-8 keys like any other."""
    joined = _settings_digest(rules_digest(), kind, versions).copy()
    joined.update(f"{digest}\0".encode())
    joined.update(os.fsencode(os.path.abspath(filename)))
    return joined.hexdigest()


def slot(filename: str, kind: str, versions: str = "") -> str:
    """What an entry answers for apart from the file's contents: the file, read as `kind`, under
    these settings. A run that answers a slot with one entry drops the slot's other entries
    (the file's old contents) when it writes the cache. (A short digest: it is only compared,
    and one that two slots shared would cost a re-lint, never a wrong answer.)"""
    named = hashlib.sha256(f"{kind}\0{versions}\0".encode())
    named.update(os.fsencode(os.path.abspath(filename)))
    return named.hexdigest()[:20]


@functools.lru_cache(maxsize=64)
def _settings_digest(rules: str, kind: str, versions: str) -> hashlib._Hash:
    """What every file of a run shares in its key, hashed once per run and kind of file."""
    return hashlib.sha256(f"{__version__}\0{rules}\0{kind}\0{versions}\0".encode())


def _subkey(codes: Iterable[str], relevant: Iterable[str]) -> str:
    """The enabled codes among the relevant ones (a file's few, looked up in the many enabled)."""
    enabled = codes if isinstance(codes, (set, frozenset)) else set(codes)
    return ",".join(sorted(code for code in relevant if code in enabled))


_FINDING_FIELDS: dict[str, tuple[type, ...]] = {
    "code": (str,), "name": (str,), "message": (str,), "line": (int,), "column": (int,), "end_line": (int,),
    "end_column": (int,), "fixable": (bool,), "fix_safety": (str, type(None)), "fix_description": (str, type(None)),
    "cell": (int, type(None)), "related": (list, type(None)),
}
_SAFETIES = {"safe", "unsafe", None}


def _well_formed(entry: object) -> TypeGuard[dict]:
    """An entry this version wrote (a damaged file reads as a miss)."""
    return (isinstance(entry, dict) and isinstance(entry.get("relevant"), list)
            and all(isinstance(code, str) for code in entry["relevant"])
            and isinstance(entry.get("results"), dict) and isinstance(entry.get("used", 0), int))


def _valid_findings(findings: object) -> bool:
    """Findings as `Finding.to_dict` wrote them: JSON of the right shape but the wrong types
    (a hand-edited or damaged cache) is a miss, never a crash on every later run."""
    return isinstance(findings, list) and all(
        isinstance(finding, dict)
        and all(isinstance(finding.get(name), types) for name, types in _FINDING_FIELDS.items())
        and finding["fix_safety"] in _SAFETIES and (finding["fix_safety"] is not None or not finding["fixable"])
        for finding in findings)


def _is_stamp(recorded: object) -> bool:
    return recorded is None or isinstance(recorded, list) and all(type(part) is int for part in recorded)


def _tables(loaded: object) -> tuple[dict, list, list, dict] | None:
    """entries, paths, groups and files of a file this version wrote; None for another layout.
    What the tables hold is checked where it is used: a damaged part is a miss."""
    if not isinstance(loaded, dict) or loaded.get("format") != FORMAT:
        return None
    entries, paths, groups, files = (loaded.get(name) for name in ("entries", "paths", "groups", "files"))
    if not (isinstance(entries, dict) and isinstance(paths, list) and isinstance(groups, list)
            and isinstance(files, dict)):
        return None
    return entries, paths, groups, files


def _split(path: str) -> tuple[str, str]:
    """`os.path.split` of an absolute, normalised path, without its generality (it runs for
    every path a warm run checks)."""
    if os.altsep:
        return os.path.split(path)
    folder, _, name = path.rpartition(os.sep)
    return folder or os.sep, name


class Cache:
    def __init__(self, folder: str, stamp: Stamp) -> None:
        """`stamp` is how the model stamped the project files a result read (the engine
        passes `odelint.analysis.project.stamp`: this layer knows nothing of the model). The
        cache serves runs over files on disk: no editor's buffer answers for a path here."""
        self.folder = folder
        self._stamp = stamp
        self.file = os.path.join(folder, f"results-{__version__}.json")
        self._entries: dict[str, dict] = {}
        self._paths: list[list] = []  # [path, stamp]: each recorded pair once
        self._groups: list[list[int]] = []  # indices into _paths: each set of pairs once
        self._files: dict[str, list] = {}  # absolute path -> [ctime_ns, mtime_ns, size, inode, digest]
        # What this run found, each asked once: a folder's names, a pair's and a group's verdict.
        self._listings: dict[str, frozenset[str] | None] = {}
        self._stamps: dict[str, list[int] | None] = {}
        self._holds: dict[int, bool] = {}
        self._fresh: dict[int, bool] = {}
        self._answered: dict[str, str] = {}  # slot -> the entry this run used or wrote for it
        self._pair_index: dict[tuple[str, str], int] | None = None  # built on the first put
        self._group_index: dict[tuple[int, ...], int] | None = None
        self._dirty = False
        self.warning: str | None = None  # why the cache file was left alone (a FIFO in its place)
        try:
            tables = _tables(json.loads(read_regular(self.file)))
        except NotRegular as error:
            self.warning = f"{error}; the cache is not used"
        except (OSError, ValueError):
            pass
        else:
            if tables is not None:
                self._entries, self._paths, self._groups, self._files = tables

    def digest(self, path: str, status: os.stat_result) -> str | None:
        """The content digest of the file at `path`, recorded when it had this `status`
        (None when it had another, or was never recorded)."""
        recorded = self._files.get(os.path.abspath(path))
        if (isinstance(recorded, list) and len(recorded) == 5 and isinstance(recorded[4], str)
                and recorded[:4] == [status.st_ctime_ns, status.st_mtime_ns, status.st_size, status.st_ino]):
            return recorded[4]
        return None

    def record(self, path: str, status: os.stat_result, digest: str) -> None:
        """The file at `path`, with this `status` (taken before it was read), holds `digest`."""
        if status.st_ctime_ns > time.time_ns() - RACY_NS:
            return
        self._files[os.path.abspath(path)] = [status.st_ctime_ns, status.st_mtime_ns, status.st_size,
                                              status.st_ino, digest]
        self._dirty = True

    def get(self, cache_key: str, codes: Iterable[str], answers: str | None = None) -> list[dict] | None:
        """The stored findings for the file with `codes` enabled; the entry's last use is
        refreshed at most daily, so a warm run over an unchanged tree does not rewrite the
        cache file. `answers` is the entry's `slot`."""
        if answers is not None:
            self._answered[answers] = cache_key
        entry = self._entries.get(cache_key)
        if not _well_formed(entry):
            return None
        group = entry.get("depends")
        if group is not None and not self._unchanged(group):
            return None
        relevant = entry["relevant"]
        findings = entry["results"].get(_subkey(codes, relevant))
        if not _valid_findings(findings):
            return None
        now = int(time.time())
        if now - entry.get("used", 0) > REFRESH_SECONDS:
            entry["used"] = now
            self._dirty = True
        return findings

    def _unchanged(self, group: object) -> bool:
        """Do the project files a cached result depends on still have the stamps it was made
        with? A path recorded as absent (None) must still be absent: a module created since
        would now answer; [] records only that a path existed (a root marker, a module found
        but not read). Groups overlap (each file of a package adds its own modules): each pair
        is checked once per run, each group once."""
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

    def _members(self, group: object) -> list[Any] | None:
        """The pairs' indices of a stored group (None for no such group)."""
        if type(group) is not int or not 0 <= group < len(self._groups):
            return None
        members = self._groups[group]
        return members if isinstance(members, list) else None

    def _pair(self, index: object) -> tuple[str, list[int] | None] | None:
        """A stored (path, stamp) pair (None for no such pair, or a damaged one)."""
        if type(index) is not int or not 0 <= index < len(self._paths):
            return None
        pair = self._paths[index]
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

    def _absent(self, path: str) -> bool:
        """Nothing at `path`. Most recorded paths are modules an import might have named and
        that were not there, many in folders that are not there either: the names in each
        folder, found once, answer for all of them."""
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
        parent, name = _split(folder)
        names: frozenset[str] | None = frozenset()
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

    def put(self, cache_key: str, relevant: Iterable[str], codes: Iterable[str], findings: list[dict],
            depends: dict[str, list[int] | None] | None = None, answers: str | None = None) -> None:
        """Store the findings of a run with `codes` enabled; `relevant` are the rules that
        could fire on the file, whether enabled or not; `depends` the project files whose
        classes the run read (path -> [mtime_ns, size]) and the paths it looked up in vain
        (path -> None): the entry holds while they do. `answers` is the entry's `slot`."""
        relevant = sorted(relevant)
        entry = self._entries.get(cache_key)
        if not _well_formed(entry) or entry["relevant"] != relevant:
            entry = self._entries[cache_key] = {"relevant": relevant, "results": {}}
        if answers is not None:
            entry["slot"] = answers
            self._answered[answers] = cache_key
        if depends:
            entry["depends"] = self._group({**self._depends(entry.get("depends")), **depends})
        stored = [{k: v for k, v in finding.items() if k != "path"} for finding in findings]
        entry["results"][_subkey(codes, relevant)] = stored
        entry["used"] = int(time.time())
        self._dirty = True

    def _depends(self, group: object) -> dict[str, list[int] | None]:
        """path -> stamp of a stored group (empty for none or a damaged one)."""
        pairs = [self._pair(index) for index in self._members(group) or ()]
        return {} if None in pairs else dict(pair for pair in pairs if pair is not None)

    def _group(self, depends: dict[str, list[int] | None]) -> int:
        """The index of the group of these (path, stamp) pairs, added when new."""
        if self._pair_index is None or self._group_index is None:
            self._pair_index = {}
            for index in range(len(self._paths)):
                stored = self._pair(index)
                if stored is not None:
                    self._pair_index[(stored[0], json.dumps(stored[1]))] = index
            self._group_index = {tuple(members): group for group, members in enumerate(self._groups)
                                 if isinstance(members, list) and all(type(index) is int for index in members)}
        indices = []
        for path, recorded in self._compressed(depends):
            pair = (path, json.dumps(recorded))
            if pair not in self._pair_index:
                self._pair_index[pair] = len(self._paths)
                self._paths.append([path, recorded])
            indices.append(self._pair_index[pair])
        members = tuple(sorted(set(indices)))
        if members not in self._group_index:
            self._group_index[members] = len(self._groups)
            self._groups.append(list(members))
        return self._group_index[members]

    def _compressed(self, depends: dict[str, list[int] | None]) -> Iterator[tuple[str, list[int] | None]]:
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

    def _superseded(self, cache_key: str, entry: dict) -> bool:
        """Did this run answer the entry's slot with another entry?"""
        answered = self._answered.get(entry["slot"]) if isinstance(entry.get("slot"), str) else None
        return answered is not None and answered != cache_key

    def _layout(self) -> dict:
        """What is written: the newest entries used within MAX_AGE_SECONDS, less those whose slot
        this run answered with another entry, and only the groups, pairs and files they use (an
        entry whose group is damaged is dropped)."""
        oldest = int(time.time()) - MAX_AGE_SECONDS
        entries = {cache_key: entry for cache_key, entry in self._entries.items()
                   if _well_formed(entry) and entry.get("used", 0) >= oldest and not self._superseded(cache_key, entry)}
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda item: item[1].get("used", 0), reverse=True)
            entries = dict(newest[:MAX_ENTRIES])
        renumbered: dict[int, int] = {}  # a group's old index -> its new one
        groups: list[list[int]] = []  # the kept groups, of the pairs' new indices
        pairs: dict[int, int] = {}  # a pair's old index -> its new one
        kept = {}
        for cache_key, entry in entries.items():
            group = entry.get("depends")
            if group is not None:
                if type(group) is not int or group not in renumbered:
                    members = self._members(group)
                    if members is None or any(self._pair(index) is None for index in members):
                        continue
                    renumbered[group] = len(groups)
                    groups.append([pairs.setdefault(index, len(pairs)) for index in members])
                entry = {**entry, "depends": renumbered[group]}
            kept[cache_key] = entry
        files = self._files
        if len(files) > MAX_ENTRIES:
            files = dict(list(files.items())[-MAX_ENTRIES:])
        return {"format": FORMAT, "paths": [self._paths[index] for index in pairs], "groups": groups,
                "files": files, "entries": kept}

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped, and leaves
        no temporary file behind."""
        if not self._dirty or self.warning is not None:
            return
        try:
            os.makedirs(self.folder, exist_ok=True)
            ignore = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("# created by odelint\n*\n")
            remove_stale_temporaries(self.folder)
        except OSError:
            return
        temporary = os.path.join(self.folder, temporary_name())
        try:
            with open(temporary, "x", encoding="utf-8") as handle:
                json.dump(self._layout(), handle, separators=(",", ":"))
            os.replace(temporary, self.file)
        except BaseException as error:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            if not isinstance(error, OSError):
                raise


def clean(folder: str) -> bool:
    """Remove the cache folder; True if there was one."""
    import shutil

    if not os.path.isdir(folder):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True
