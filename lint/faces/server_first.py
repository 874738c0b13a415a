"""The first document's lint, in a process forked before the server imports anything.

An editor starts the server and opens a file at once. The server's own imports (pygls,
lsprotocol: about 300 ms) come before it can answer `initialize`, and the engine's (LibCST,
the rules: 110-150 ms) before it can lint: in one process the first document waits for both
in turn, and the engine's load alone was a quarter of the first lint after `didOpen`. So the
server forks as it starts: the child loads the engine on another core while the server
imports pygls, then lints the first document the editor opens and hands back its findings
as plain data (no nodes, no fixes). The server publishes them, and its own lint follows: the
one whose tree later edits reuse and whose findings carry their fixes.

The child lints one document, through the same code the server lints with
(odelint.faces.server_lint; as a file linted once, since no edit follows there), and goes as
soon as it has answered or the server has loaded the engine itself (from then on it would
save nothing). It is never made on one core, where it would only compete, nor where
`os.fork` is missing. Forked twice, it is no child of the server's to reap; its end of the
pipes closes when the server exits, and then it exits too.
"""

from __future__ import annotations

import os
import pickle
import struct
import threading
from typing import Any

_LENGTH = struct.Struct("!Q")


def start() -> FirstLint | None:
    """Fork the child (before any thread exists); None where it would not help."""
    if not hasattr(os, "fork") or _cores() < 2:
        return None
    request_read, request_write = os.pipe()
    answer_read, answer_write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        _child(request_read, answer_write, (request_write, answer_read))
    os.close(request_read)
    os.close(answer_write)
    if pid < 0:
        os.close(request_write)
        os.close(answer_read)
        return None
    os.waitpid(pid, 0)  # the first fork, gone at once (its own child does the work)
    return FirstLint(request_write, answer_read)


def _cores() -> int:
    affinity = getattr(os, "sched_getaffinity", None)
    return len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)


class FirstLint:
    """The server's end: claimed by one document, or let go once the server has loaded."""

    def __init__(self, requests: int, answers: int) -> None:
        self._requests = requests
        self._answers = answers
        self._lock = threading.Lock()
        self._claimed = False

    def claim(self) -> bool:
        """True for the first caller while the child still waits for a document."""
        with self._lock:
            if self._claimed or self._requests < 0:
                return False
            self._claimed = True
            return True

    def exchange(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """Send a claimed request and wait for the answer (blocking: run it off the event loop);
        None when the child could not answer."""
        try:
            _send(self._requests, pickle.dumps(request, pickle.HIGHEST_PROTOCOL))
            data = _receive(self._answers)
            return pickle.loads(data) if data is not None else None
        except Exception:  # whatever went wrong, the server lints the document itself
            return None
        finally:
            self._close()

    def release(self) -> None:
        """The server has loaded the engine: an unclaimed child is let go."""
        with self._lock:
            if not self._claimed:
                self._close()

    def _close(self) -> None:
        for fd in (self._requests, self._answers):
            if fd >= 0:
                os.close(fd)
        self._requests = self._answers = -1


def _child(requests: int, answers: int, servers_ends: tuple[int, int]) -> None:
    """Never returns. Silent whatever happens: the server lints the document anyway."""
    try:
        if os.fork() != 0:
            os._exit(0)
        for fd in servers_ends:
            os.close(fd)
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0)
        os.dup2(quiet, 1)  # the server's stdout is the editor's channel
        from odelint.engine.preload import load_linting

        load_linting(every_analysis=False)
        data = _receive(requests)
        if data is not None:
            _send(answers, pickle.dumps(_lint(pickle.loads(data)), pickle.HIGHEST_PROTOCOL))
    except BaseException:  # nothing may reach the editor from here
        pass
    os._exit(0)


def _lint(request: dict[str, Any]) -> dict[str, Any]:
    """As the server lints, but as a file linted once: no edit follows here, so the gate may
    drop the rules that cannot fire, which the server's document runs for its later edits."""
    from odelint.faces.server_lint import Linted, lint_buffer, resolver, share_buffers

    share_buffers(request["open_files"])
    linted = lint_buffer(Linted(request["uri"], request["version"], request["text"], request["path"]),
                         resolver(request["root"]), None)
    return {"findings": [finding.to_dict() for finding in linted.findings], "crashes": linted.crashes,
            "config_error": linted.config_error}


def _send(fd: int, data: bytes) -> None:
    view = memoryview(_LENGTH.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int) -> bytes | None:
    """One message; None at the end of input."""
    head = _read_exactly(fd, _LENGTH.size)
    return None if head is None else _read_exactly(fd, _LENGTH.unpack(head)[0])


def _read_exactly(fd: int, size: int) -> bytes | None:
    chunks: list[bytes] = []
    left = size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
