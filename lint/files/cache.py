"""Per-file results keyed by content, file name and kind, odelint version, the rules' sources and
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
from collections.abc import Iterable
from typing import TypeGuard

from odelint import __version__
from odelint.api.registry import rules_digest

CACHE_DIR = ".odelint_cache"
MAX_ENTRIES = 100_000
REFRESH_SECONDS = 24 * 3600


def key(data: bytes, filename: str, kind: str, versions: str = "") -> str:
    """The file's entry. `kind` says how the bytes were read (Python, a notebook, a text file);
    the rules' digest keeps a changed gate from answering for an old one, and `versions` (the
    target versions of the JAX stack) one computed for other versions."""
    digest = hashlib.sha256(data)
    digest.update(f"\0{__version__}\0{rules_digest()}\0{os.path.basename(filename)}\0{kind}\0{versions}".encode())
    return digest.hexdigest()


def _subkey(codes: Iterable[str]) -> str:
    return ",".join(sorted(codes))


def _well_formed(entry: object) -> TypeGuard[dict]:
    """An entry this version wrote (an older one, or a damaged file, reads as a miss)."""
    return (isinstance(entry, dict) and isinstance(entry.get("relevant"), list)
            and isinstance(entry.get("results"), dict))


def _unchanged(depends: object) -> bool:
    """Do the project files a cached result depends on still have the stamps it was made with?"""
    if not isinstance(depends, dict):
        return False
    if not depends:
        return True
    from odelint.analysis.project import stamp  # only a file that read another file's classes gets here

    return all(stamp(path) == recorded for path, recorded in depends.items())


class Cache:
    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.file = os.path.join(folder, f"results-{__version__}.json")
        self._entries: dict[str, dict] = {}
        self._dirty = False
        try:
            with open(self.file, encoding="utf-8") as handle:
                loaded = json.load(handle)
            if isinstance(loaded, dict):
                self._entries = loaded
        except (OSError, ValueError):
            self._entries = {}

    def get(self, cache_key: str, codes: Iterable[str]) -> list[dict] | None:
        """The stored findings for the file with `codes` enabled; the entry's last use is
        refreshed at most daily, so a warm run over an unchanged tree does not rewrite the
        cache file."""
        entry = self._entries.get(cache_key)
        if not _well_formed(entry):
            return None
        if not _unchanged(entry.get("depends", {})):
            return None
        relevant = entry["relevant"]
        findings = entry["results"].get(_subkey(code for code in codes if code in relevant))
        if not isinstance(findings, list):
            return None
        now = int(time.time())
        if now - entry.get("used", 0) > REFRESH_SECONDS:
            entry["used"] = now
            self._dirty = True
        return findings

    def put(self, cache_key: str, relevant: Iterable[str], codes: Iterable[str], findings: list[dict],
            depends: dict[str, list[int]] | None = None) -> None:
        """Store the findings of a run with `codes` enabled; `relevant` are the rules that
        could fire on the file, whether enabled or not; `depends` the project files whose
        classes the run read (path -> [mtime_ns, size]): the entry holds while they do."""
        relevant = sorted(relevant)
        entry = self._entries.get(cache_key)
        if not _well_formed(entry) or entry["relevant"] != relevant:
            entry = self._entries[cache_key] = {"relevant": relevant, "results": {}}
        if depends:
            entry["depends"] = {**entry.get("depends", {}), **depends}
        stored = [{k: v for k, v in finding.items() if k != "path"} for finding in findings]
        entry["results"][_subkey(code for code in codes if code in relevant)] = stored
        entry["used"] = int(time.time())
        self._dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
        import tempfile  # a warm run over an unchanged tree writes nothing

        if not self._dirty:
            return
        entries = self._entries
        if len(entries) > MAX_ENTRIES:
            newest = sorted(entries.items(), key=lambda item: item[1].get("used", 0), reverse=True)
            entries = dict(newest[:MAX_ENTRIES])
        try:
            os.makedirs(self.folder, exist_ok=True)
            ignore = os.path.join(self.folder, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write("# created by odelint\n*\n")
            handle_fd, temporary = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle_fd, "w", encoding="utf-8") as handle:
                json.dump(entries, handle, separators=(",", ":"))
            os.replace(temporary, self.file)
        except OSError:
            return


def clean(folder: str) -> bool:
    """Remove the cache folder; True if there was one."""
    import shutil

    if not os.path.isdir(folder):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return True
