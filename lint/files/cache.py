"""Per-file results keyed by content, odelint version, enabled rules and file kind.

One JSON file per cache folder, read once at start and written atomically at the end (only
when something changed), so a warm run over an unchanged tree reads and hashes files but
parses none and writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterable

from odelint import __version__

CACHE_DIR = ".odelint_cache"
MAX_ENTRIES = 100_000
REFRESH_SECONDS = 24 * 3600


def key(data: bytes, filename: str, codes: Iterable[str], kind: str) -> str:
    """`kind` says how the bytes were read: Python, a notebook, a text file."""
    digest = hashlib.sha256(data)
    digest.update(f"\0{__version__}\0{os.path.basename(filename)}\0{kind}\0{','.join(sorted(codes))}".encode())
    return digest.hexdigest()


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

    def get(self, cache_key: str) -> list[dict] | None:
        """The stored findings; the entry's last use is refreshed at most daily, so a warm
        run over an unchanged tree does not rewrite the cache file."""
        entry = self._entries.get(cache_key)
        if entry is None:
            return None
        now = int(time.time())
        if now - entry.get("used", 0) > REFRESH_SECONDS:
            entry["used"] = now
            self._dirty = True
        return entry["findings"]

    def put(self, cache_key: str, findings: list[dict]) -> None:
        stored = [{k: v for k, v in finding.items() if k != "path"} for finding in findings]
        self._entries[cache_key] = {"findings": stored, "used": int(time.time())}
        self._dirty = True

    def save(self) -> None:
        """Write atomically; a cache that cannot be written is silently skipped."""
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
