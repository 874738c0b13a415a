"""Whole-run records: a `check` repeated over a project nothing has changed in is answered
from one record, without walking the project, reading its settings or looking up each file.

A run that answered every file (from the per-file cache or by linting it) without an error or
a warning records, under its key (the command line and the folder it ran in, odelint, the
rules' sources and Python):
- the status of everything it looked at before linting (`odelint.files.observed`): the files
  it opened (settings, .gitignore files, dependency pins, installed metadata), the folders it
  listed (a file added, removed or renamed in one changes its status), the paths whose
  existence it asked about (a `pyproject.toml` or `.git` above the project), and each file
  it answered for;
- the other project files its results read (`odelint.files.depends`);
- its findings and how many files it answered for.

The next run with the same key stats each of them, and when every one is as recorded, its
findings are those recorded. Otherwise it runs as usual (the per-file cache still answers the
files that did not change) and records anew. A run with no cache file yet is not recorded
(watching it would cost a run that lints everything 4%). A run that looked at something changed
shortly before it began (or while it ran) is not recorded: within the file system's clock's
granularity, a change may leave a status as it was. A record is used for a day at most, so
the per-file cache's entries are still refreshed by a run that reads them
(`odelint.files.cache.REFRESH_SECONDS`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable

from odelint import __version__
from odelint.api.registry import rules_digest
from odelint.api.rule_index import statuses_digest
from odelint.files import observed
from odelint.files.cache import REFRESH_SECONDS, prepare, results_file, valid_findings, write
from odelint.files.depends import Dependencies, Recorded, Stamp
from odelint.files.digest import hexdigest
from odelint.files.fileio import RACY_NS, identity, read_regular

FORMAT = 1
KEPT = 16  # records kept per cache folder (one per command line and folder), the newest


def key(options: Iterable[tuple[str, object]], cwd: str) -> str:
    """What a run's answer is for: its options (every one, as parsed), the folder it runs in,
    odelint (its version, its rules' sources and its own modules: a checkout being worked on
    keeps its version), and the Python that runs it (its packages' versions)."""
    described = json.dumps([FORMAT, __version__, rules_digest(), _code_digest(), sys.version, sys.executable,
                            sys.path, cwd, sorted(options, key=lambda item: item[0])], default=repr)
    return hexdigest(described.encode("utf-8", "surrogatepass"))


def _code_digest() -> str:
    """The statuses of odelint's modules, less the rules' (`rules_digest` has them): what
    decides which files a run reads, and how, is not in the rules. Only packages are walked
    (the fixture programs `confirm` runs are package data)."""
    top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    modules = []
    for folder, subfolders, names in os.walk(top):
        subfolders[:] = sorted(name for name in subfolders if (name != "rules" or folder != top)
                               and os.path.exists(os.path.join(folder, name, "__init__.py")))
        modules += [os.path.join(folder, name) for name in sorted(names) if name.endswith(".py")]
    return statuses_digest(modules, top)


def _file(folder: str, run_key: str) -> str:
    return os.path.join(folder, f"run-{run_key[:32]}.json")


class Replay:
    """A recorded answer: the findings (as `Finding.to_dict` writes them), the number of files
    answered, and whether unsafe fixes were shown as available."""

    def __init__(self, findings: list[dict], files: int, unsafe_shown: bool) -> None:
        self.findings = findings
        self.files = files
        self.unsafe_shown = unsafe_shown


def replay(folder: str, run_key: str, stamp: Stamp) -> Replay | None:
    """The recorded answer of the run `run_key` names, when nothing it looked at has changed;
    `stamp` is how the project files its results read were stamped (as the cache's)."""
    try:
        record = json.loads(read_regular(_file(folder, run_key)))  # a FIFO in its place is not waited on
    except (OSError, ValueError):
        return None
    if not (isinstance(record, dict) and record.get("format") == FORMAT and record.get("key") == run_key
            and isinstance(record.get("made"), int) and 0 <= time.time() - record["made"] <= REFRESH_SECONDS):
        return None
    statuses, present, paths, groups = (record.get(name) for name in ("statuses", "present", "paths", "groups"))
    findings, files, unsafe_shown = record.get("findings"), record.get("files"), record.get("unsafe_shown")
    if not (isinstance(statuses, list) and isinstance(present, list) and isinstance(paths, list)
            and isinstance(groups, list) and type(files) is int and type(unsafe_shown) is bool
            and valid_findings(findings) and all(isinstance(finding.get("path"), str) for finding in findings)):
        return None
    for entry in statuses:
        if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)) \
                or _status(entry[0]) != entry[1]:
            return None
    for entry in present:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and entry[1] in observed.PREDICATES) or observed.PREDICATES[entry[1]](entry[0]) is not entry[2]:
            return None
    if groups and not Dependencies(paths, groups, stamp).unchanged(0):
        return None
    return Replay(findings, files, unsafe_shown)


def _status(path: str) -> list[int] | None:
    try:
        return identity(os.stat(path))
    except OSError:
        return None


class Recorder:
    """Watches one run from before its settings are read until it starts linting (`stop`),
    is told what the run answered for (`answered`), and records the run (`store`)."""

    def __init__(self, folder: str, run_key: str, stamp: Stamp) -> None:
        self.folder = os.path.abspath(folder)
        self.key = run_key
        self._stamp = stamp
        self._statuses: dict[str, list[int] | None] | None = None  # None: not recordable
        self._present: list[list] = []
        self._targets: list[tuple[str, os.stat_result]] | None = None
        self._depends: Recorded = {}
        self._observation: observed.Observation | None = None
        # Only where the cache is filled: a run that must lint the project (the first one, or
        # the first of a new version) is not recorded. Once the audit hook is in, every audited
        # event of the process calls it, and the model calls `id()` (an audited event) 600,000
        # times over the users corpus: 4% of a run that lints it, in each worker it forks.
        # The cache folder is made before the run looks at anything: making it changes the
        # folder that holds it.
        if os.path.exists(results_file(self.folder)) and prepare(self.folder):
            self._began = time.time_ns()
            self._observation = observed.start()

    def stop(self) -> None:
        """The run starts linting: what it reads from now on is not what it decided with. The
        status of each thing it looked at is taken now; one changed since shortly before the
        run began may not be what the run read, and the run is not recorded."""
        observed.stop()
        observation, self._observation = self._observation, None
        if observation is None or not observation.complete:
            return
        inside = self.folder + os.sep  # the cache itself changes with every run that writes it
        statuses: dict[str, list[int] | None] = {}
        for path in sorted(observation.opened | observation.listed):
            if path != self.folder and not path.startswith(inside):
                try:
                    status = os.stat(path)
                except OSError:
                    statuses[path] = None
                    continue
                if not self._before(status):
                    return
                statuses[path] = identity(status)
        self._statuses = statuses
        self._present = [[path, predicate, answer]
                         for (path, predicate), answer in sorted(observation.looked_up.items())]

    def _before(self, status: os.stat_result) -> bool:
        """Unchanged since shortly before the run began (within the file system's clock's
        granularity, a change may leave the status as it was)."""
        return max(status.st_ctime_ns, status.st_mtime_ns) <= self._began - RACY_NS

    def answered(self, targets: list[tuple[str, os.stat_result]], depends: Recorded) -> None:
        """Every file the run answered for (absolute path, status as discovery found it), and
        the project files their results read."""
        self._targets = targets
        self._depends = depends

    def store(self, findings: list[dict], files: int, unsafe_shown: bool) -> None:
        """Record the run, unless it cannot be sure of what it looked at."""
        self.stop()
        if self._statuses is None or self._targets is None:
            return
        statuses = dict(self._statuses)
        for path, status in self._targets:
            if not self._before(status):
                return
            statuses[path] = identity(status)
        depends = Dependencies([], [], self._stamp)
        if self._depends:
            depends.group(self._depends)
        write(self.folder, _file(self.folder, self.key), {
            "format": FORMAT, "key": self.key, "made": int(time.time()),
            "statuses": [[path, status] for path, status in statuses.items()], "present": self._present,
            "paths": depends.paths, "groups": depends.groups,
            "findings": findings, "files": files, "unsafe_shown": unsafe_shown})
        _prune(self.folder)


def _prune(folder: str) -> None:
    """Keep the KEPT newest records."""
    try:
        records = [entry for entry in os.scandir(folder) if entry.name.startswith("run-")
                   and entry.name.endswith(".json")]
        records.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for entry in records[KEPT:]:
            os.unlink(entry.path)
    except OSError:
        pass
