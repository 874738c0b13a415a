"""What a run looked at before it linted anything: every file it opened to read, every folder
it listed, and every path whose existence it asked about where no listing answers (a
`pyproject.toml` or a `.git` above the folders it walks).

Opened files and listed folders come from Python's audit events (`open`, `os.listdir`,
`os.scandir`), so no reader of settings, ignore files, pins or installed metadata can forget
to say what it read; a path asked about with a stat raises no event, and its two askers
(`odelint.files.config`, `odelint.files.discover`) ask through `exists` and `isfile`. A whole-run record
(`odelint.files.runs`) holds while all of them are as they were.

The hook is installed once per process (an audit hook cannot be removed) and returns at once
while nothing is observed.
"""

from __future__ import annotations

import os
import sys

_WRITING = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class Observation:
    def __init__(self) -> None:
        self.opened: set[str] = set()  # absolute paths of files opened to be read
        self.listed: set[str] = set()  # absolute paths of folders listed
        self.looked_up: dict[tuple[str, str], bool] = {}  # (absolute path, predicate) -> its answer
        self.complete = True  # False once something was read that no path names (a descriptor)


_current: Observation | None = None
_installed = False


def start() -> Observation:
    """Observe from now until `stop`."""
    global _current, _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    _current = Observation()
    return _current


def stop() -> None:
    global _current
    _current = None


PREDICATES = {"exists": os.path.exists, "isfile": os.path.isfile}


def exists(path: str) -> bool:
    """`os.path.exists`, observed."""
    return _asked(path, "exists")


def isfile(path: str) -> bool:
    """`os.path.isfile`, observed."""
    return _asked(path, "isfile")


def _asked(path: str, predicate: str) -> bool:
    answer = PREDICATES[predicate](path)
    if _current is not None:
        _current.looked_up[(os.path.abspath(path), predicate)] = answer
    return answer


def _hook(event: str, args: tuple) -> None:
    observation = _current
    if observation is None:
        return
    if event == "open":
        path, mode, flags = args
        if isinstance(mode, str) and any(letter in mode for letter in "wax+"):
            return
        if mode is None and flags & _WRITING:
            return
        if isinstance(path, int):
            observation.complete = False
        elif path is not None:
            name = os.fsdecode(path)
            if not name.endswith(".pyc"):  # a module imported on the way: the installed code
                observation.opened.add(os.path.abspath(name))
    elif event in ("os.listdir", "os.scandir"):
        path = args[0]
        if isinstance(path, int):
            observation.complete = False
        else:
            observation.listed.add(os.path.abspath(os.fsdecode(path) if path is not None else "."))
