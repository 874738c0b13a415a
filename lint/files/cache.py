"""Per-file results keyed by content, file path and kind, odelint version, the rules' sources and
the target versions of the JAX stack, then by the enabled rules that could fire on the file.

A file's entry records which rules could report anything on it (`odelint.engine.relevance`:
those whose trigger words it holds and that look at its kind of file) and holds one result
per subset of those rules that was on. Turning a rule on or off therefore re-lints only the
files that pass its gate; every other file keeps its result, and a warm run computes no gate.

One JSON file per cache folder, read once at start and written atomically at the end (only
when something changed), so a warm run over an unchanged tree reads and hashes files but
parses none and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from typing import TypeGuard

from odelint import __version__
from odelint.api.registry import rules_digest
from odelint.files.fileio import NotRegular, read_regular, remove_stale_temporaries, temporary_name

CACHE_DIR = ".odelint_cache"
MAX_ENTRIES = 100_000
REFRESH_SECONDS = 24 * 3600
Stamp = Callable[[str], "list[int] | None"]


def key(data: bytes, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry. `kind` says how the bytes were read (Python, a notebook, a text file);
    the rules' digest keeps a changed gate from answering for an old one, and `versions` (the
    target versions of the JAX stack) one computed for other versions. The file's folder is
    part of the key: the same train.py beside another model.py is another result. The name is
    keyed by its bytes, so a name that is not valid UTF-8 keys like any other."""
    digest = hashlib.sha256(data)
    digest.update(f"\0{__version__}\0{rules_digest()}\0{kind}\0{versions}\0".encode())
    digest.update(os.fsencode(os.path.abspath(filename)))
    return digest.hexdigest()


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
    """An entry this version wrote (an older one, or a damaged file, reads as a miss)."""
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


class Cache:
    def __init__(self, folder: str, stamp: Stamp) -> None:
        """`stamp` is how the model stamped the project files a result read (the engine
        passes `odelint.analysis.project.stamp`: this layer knows nothing of the model)."""
        self.folder = folder
        self._stamp = stamp
        # Stamps taken once per run: the files of a project depend on the same few (its root
        # markers, its shared modules); a warm run over the users corpus asked for 12,883
        # stamps of 2,979 paths.
        self._stamps: dict[str, list[int] | None] = {}
        self.file = os.path.join(folder, f"results-{__version__}.json")
        self._entries: dict[str, dict] = {}
        self._dirty = False
        self.warning: str | None = None  # why the cache file was left alone (a FIFO in its place)
        try:
            loaded = json.loads(read_regular(self.file))
            if isinstance(loaded, dict):
                self._entries = loaded
        except NotRegular as error:
            self.warning = f"{error}; the cache is not used"
        except (OSError, ValueError):
            self._entries = {}

    def get(self, cache_key: str, codes: Iterable[str]) -> list[dict] | None:
        """The stored findings for the file with `codes` enabled; the entry's last use is
        refreshed at most daily, so a warm run over an unchanged tree does not rewrite the
        cache file."""
        entry = self._entries.get(cache_key)
        if not _well_formed(entry):
            return None
        if not self._unchanged(entry.get("depends", {})):
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

    def _unchanged(self, depends: object) -> bool:
        """Do the project files a cached result depends on still have the stamps it was made
        with? A path recorded as absent (None) must still be absent: a module created since
        would now answer; [] records only that a path existed (a root marker, a module found
        but not read). (One loop, no call per path: a warm run checks every file's paths.)"""
        if not isinstance(depends, dict):
            return False
        stamps = self._stamps
        for path, recorded in depends.items():
            if path in stamps:
                found = stamps[path]
            elif isinstance(path, str):
                found = stamps[path] = self._stamp(path)
            else:
                return False
            if (found is None) if recorded == [] else (found != recorded):
                return False
        return True

    def put(self, cache_key: str, relevant: Iterable[str], codes: Iterable[str], findings: list[dict],
            depends: dict[str, list[int] | None] | None = None) -> None:
        """Store the findings of a run with `codes` enabled; `relevant` are the rules that
        could fire on the file, whether enabled or not; `depends` the project files whose
        classes the run read (path -> [mtime_ns, size]) and the paths it looked up in vain
        (path -> None): the entry holds while they do."""
        relevant = sorted(relevant)
        entry = self._entries.get(cache_key)
        if not _well_formed(entry) or entry["relevant"] != relevant:
            entry = self._entries[cache_key] = {"relevant": relevant, "results": {}}
        if depends:
            recorded = entry.get("depends")
            entry["depends"] = {**(recorded if isinstance(recorded, dict) else {}), **depends}
        stored = [{k: v for k, v in finding.items() if k != "path"} for finding in findings]
        entry["results"][_subkey(codes, relevant)] = stored
        entry["used"] = int(time.time())
        self._dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped, and leaves
        no temporary file behind."""
        if not self._dirty or self.warning is not None:
            return
        entries = self._entries
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda item: item[1].get("used", 0) if _well_formed(item[1]) else 0,
                            reverse=True)
            entries = dict(newest[:MAX_ENTRIES])
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
                json.dump(entries, handle, separators=(",", ":"))
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
