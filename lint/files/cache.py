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
  and each set of them once (`odelint.files.depends`);
- `entries`: each records its `slot` (the file and the settings it answers for), so that a
  file's entry for contents it no longer has is dropped once a run has answered it anew, and
  an entry no run has used for a week is dropped too: the file stays the size of the project;
- `verdicts`: which paths .gitignore files and `per-file-ignores` patterns match
  (`odelint.files.verdicts`), per set of patterns, each kept until a run finds its place's
  patterns changed.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterable

from odelint import __version__
from odelint.api.registry import rules_digest
from odelint.files.depends import Dependencies, Recorded, Stamp
from odelint.files.digest import Hash, hasher, hexdigest
from odelint.files.fileio import (
    NotRegular,
    identity,
    read_regular,
    remove_stale_temporaries,
    settled,
    temporary_name,
)
from odelint.files.verdicts import Memo, Verdicts, superseded

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TypeGuard

CACHE_DIR = ".odelint_cache"
FORMAT = 3  # the layout above (3: BLAKE2b digests); a file of another layout reads as empty
MAX_ENTRIES = 100_000
REFRESH_SECONDS = 24 * 3600
# An entry no run has used for this long is dropped when the cache is written: each edit of a
# file leaves the entry of its old contents behind, and every warm run reads them all.
MAX_AGE_SECONDS = 7 * 24 * 3600


def content(data: bytes) -> str:
    """A file's content digest."""
    return hexdigest(data)


def key(data: bytes, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry, from its bytes."""
    return keyed(content(data), filename, kind, versions)


def keyed(digest: str, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry, from its content digest. `kind` says how the bytes were read (Python,
    a notebook, a text file); the rules' digest keeps a changed gate from answering for an old
    one, and `versions` (the target versions of the JAX stack) one computed for other versions.
    The file's folder is part of the key: the same train.py beside another model.py is another
    result. The name is keyed by its bytes, so a name that is not valid UTF-8 keys like any other."""
    return _keyed(digest, os.fsencode(os.path.abspath(filename)), kind, versions)


def slot(filename: str, kind: str, versions: str = "") -> str:
    """What an entry answers for apart from the file's contents: the file, read as `kind`, under
    these settings. A run that answers a slot with one entry drops the slot's other entries
    (the file's old contents) when it writes the cache. (A short digest: it is only compared,
    and one that two slots shared would cost a re-lint, never a wrong answer.)"""
    return _slot(os.fsencode(os.path.abspath(filename)), kind, versions)


def addressed(digest: str, absolute: str, kind: str, versions: str = "") -> tuple[str, str]:
    """`keyed` and `slot` of a file at an absolute, normalised path: its name encoded once and
    no `abspath`, as a warm run asks for every file."""
    name = os.fsencode(absolute)
    return _keyed(digest, name, kind, versions), _slot(name, kind, versions)


def _keyed(digest: str, name: bytes, kind: str, versions: str) -> str:
    joined = _settings_digest(rules_digest(), kind, versions).copy()
    joined.update(f"{digest}\0".encode())
    joined.update(name)
    return joined.hexdigest()


def _slot(name: bytes, kind: str, versions: str) -> str:
    named = _slot_digest(kind, versions).copy()
    named.update(name)
    return named.hexdigest()[:20]


@functools.lru_cache(maxsize=64)
def _settings_digest(rules: str, kind: str, versions: str) -> Hash:
    """What every file of a run shares in its key, hashed once per run and kind of file."""
    return hasher(f"{__version__}\0{rules}\0{kind}\0{versions}\0".encode())


@functools.lru_cache(maxsize=64)
def _slot_digest(kind: str, versions: str) -> Hash:
    """What every file of a run shares in its slot."""
    return hasher(f"{kind}\0{versions}\0".encode())


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


def valid_findings(findings: object) -> TypeGuard[list[dict]]:
    """Findings as `Finding.to_dict` wrote them: JSON of the right shape but the wrong types
    (a hand-edited or damaged cache) is a miss, never a crash on every later run."""
    return isinstance(findings, list) and all(
        isinstance(finding, dict)
        and all(isinstance(finding.get(name), types) for name, types in _FINDING_FIELDS.items())
        and finding["fix_safety"] in _SAFETIES and (finding["fix_safety"] is not None or not finding["fixable"])
        for finding in findings)


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


class Cache:
    def __init__(self, folder: str, stamp: Stamp) -> None:
        """`stamp` is how the model stamped the project files a result read (the engine
        passes `odelint.analysis.project.stamp`: this layer knows nothing of the model). The
        cache serves runs over files on disk: no editor's buffer answers for a path here."""
        self.folder = folder
        self._stamp = stamp
        self.file = results_file(folder)
        self._entries: dict[str, dict] = {}
        self._files: dict[str, list] = {}  # absolute path -> [ctime_ns, mtime_ns, size, inode, digest]
        self._answered: dict[str, str] = {}  # slot -> the entry this run used or wrote for it
        self._dirty = False
        self.warning: str | None = None  # why the cache file was left alone (a FIFO in its place)
        paths: list = []
        groups: list = []
        loaded: dict = {}
        tables = None
        try:
            loaded = json.loads(read_regular(self.file))
            tables = _tables(loaded)
        except NotRegular as error:
            self.warning = f"{error}; the cache is not used"
        except (OSError, ValueError):
            pass
        else:
            if tables is not None:
                self._entries, paths, groups, self._files = tables
        self._depends = Dependencies(paths, groups, stamp)
        verdicts = loaded.get("verdicts") if tables is not None else None  # optional: older files lack it
        self.verdicts: Verdicts = {
            filed: each for filed, each in verdicts.items() if isinstance(each, dict)
        } if isinstance(verdicts, dict) else {}

    def digest(self, absolute: str, status: os.stat_result) -> str | None:
        """The content digest of the file at the `absolute` path, recorded when it had this
        `status` (None when it had another, or was never recorded)."""
        recorded = self._files.get(absolute)
        if (isinstance(recorded, list) and len(recorded) == 5 and isinstance(recorded[4], str)
                and recorded[:4] == identity(status)):
            return recorded[4]
        return None

    def listed(self, listings: dict[str, list[str]]) -> None:
        """The names in the folders this run's discovery walked, by absolute path: the check
        that a module is still absent does not list them again."""
        self._depends.listed(listings)

    def keep_verdicts(self, memo: Memo) -> None:
        """Keep the verdicts this run consulted, and those it had no occasion to (a run over a
        few named files, as pre-commit's, walks no folder), less those whose place it found
        with other patterns (an edited .gitignore)."""
        dropped = superseded(self.verdicts, memo.consulted)
        if memo.learned or dropped or not memo.consulted.keys() <= self.verdicts.keys():
            self._dirty = True
        self.verdicts = {filed: each for filed, each in self.verdicts.items() if filed not in dropped} | memo.consulted

    def record(self, absolute: str, status: os.stat_result, digest: str) -> None:
        """The file at the `absolute` path, with this `status` (taken before it was read), holds
        `digest`."""
        if settled(status):  # one changed just now may change again unseen: not kept
            self._files[absolute] = [*identity(status), digest]
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
        if group is not None and not self._depends.unchanged(group):
            return None
        relevant = entry["relevant"]
        findings = entry["results"].get(_subkey(codes, relevant))
        if not valid_findings(findings):
            return None
        now = int(time.time())
        if now - entry.get("used", 0) > REFRESH_SECONDS:
            entry["used"] = now
            self._dirty = True
        return findings

    def put(self, cache_key: str, relevant: Iterable[str], codes: Iterable[str], findings: list[dict],
            depends: Recorded | None = None, answers: str | None = None) -> None:
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
            entry["depends"] = self._depends.group({**self._depends.recorded(entry.get("depends")), **depends})
        stored = [{k: v for k, v in finding.items() if k != "path"} for finding in findings]
        entry["results"][_subkey(codes, relevant)] = stored
        entry["used"] = int(time.time())
        self._dirty = True

    def _superseded(self, cache_key: str, entry: dict) -> bool:
        """Did this run answer the entry's slot with another entry?"""
        answered = self._answered.get(entry["slot"]) if isinstance(entry.get("slot"), str) else None
        return answered is not None and answered != cache_key

    def _layout(self) -> dict:
        """What is written: the newest entries used within MAX_AGE_SECONDS, less those whose slot
        this run answered with another entry, with only the groups and pairs they use (an entry
        whose group is damaged is dropped), and the newest MAX_ENTRIES files' statuses."""
        oldest = int(time.time()) - MAX_AGE_SECONDS
        entries = {cache_key: entry for cache_key, entry in self._entries.items()
                   if _well_formed(entry) and entry.get("used", 0) >= oldest and not self._superseded(cache_key, entry)}
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda item: item[1].get("used", 0), reverse=True)
            entries = dict(newest[:MAX_ENTRIES])
        renumbered, paths, groups = self._depends.compacted(entry.get("depends") for entry in entries.values())
        kept = {}
        for cache_key, entry in entries.items():
            group = entry.get("depends")
            if group is not None:
                if type(group) is not int or group not in renumbered:
                    continue  # a damaged group
                entry = {**entry, "depends": renumbered[group]}
            kept[cache_key] = entry
        files = self._files
        if len(files) > MAX_ENTRIES:
            files = dict(list(files.items())[-MAX_ENTRIES:])
        verdicts = self.verdicts if sum(map(len, self.verdicts.values())) <= MAX_ENTRIES else {}
        return {"format": FORMAT, "paths": paths, "groups": groups, "files": files, "entries": kept,
                "verdicts": verdicts}

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped, and leaves
        no temporary file behind."""
        if self._dirty and self.warning is None:
            write(self.folder, self.file, self._layout())

    def depends_of(self, cache_keys: Iterable[str]) -> Recorded:
        """The project files the stored entries' results read, with their stamps (each group
        of them read once: the files of a package share a few)."""
        return self._depends.union(entry["depends"] for entry in map(self._entries.get, cache_keys)
                                   if isinstance(entry, dict) and type(entry.get("depends")) is int)


def results_file(folder: str) -> str:
    """The cache file of this version of odelint in the cache `folder`."""
    return os.path.join(folder, f"results-{__version__}.json")


def prepare(folder: str) -> bool:
    """Make the cache `folder`, with a .gitignore, when missing; False if it cannot be made."""
    try:
        os.makedirs(folder, exist_ok=True)
        ignore = os.path.join(folder, ".gitignore")
        if not os.path.exists(ignore):
            with open(ignore, "w", encoding="utf-8") as handle:
                handle.write("# created by odelint\n*\n")
    except OSError:
        return False
    return True


def write(folder: str, file: str, layout: object) -> None:
    """Write `layout` as JSON to `file` in the cache `folder`, atomically (`prepare`d first); a
    file that cannot be written is silently skipped, and leaves no temporary file behind."""
    if not prepare(folder):
        return
    try:
        remove_stale_temporaries(folder)
    except OSError:
        return
    temporary = os.path.join(folder, temporary_name())
    try:
        with open(temporary, "x", encoding="utf-8") as handle:
            handle.write(json.dumps(layout, separators=(",", ":")))  # encoded in one go: `dump` writes piece by piece
        os.replace(temporary, file)
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
