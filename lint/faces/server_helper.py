"""A second process beside the language server: it lints the first document while the server
is still loading, then one share of the rules on every lint.

An editor starts the server and opens a file at once. The server's own imports (pygls,
lsprotocol: about 300 ms) come before it can answer `initialize`, and the engine's (LibCST,
the rules: 110-150 ms) before it can lint. So the server forks as it starts, before it imports
anything: the helper loads the engine on another core while the server imports pygls, lints
the first document the editor opens (keeping its tree, which its share of the server's own
lint of that document then reuses) and hands back its findings as plain data (no nodes, no
fixes). The server shows them, then its
own lint.

After that, every lint is split between the two processes: the rules of one family (`SHARED`)
run in the helper, all others in the server, at once, on the same text with the same
settings; the server merges the findings. A re-lint of a training script is Python under one
lock, and an editor's machine has more than one core: the two shares of a keystroke's re-lint
cost about the same (12 and 13 ms where all rules take 21 ms in one process). The helper keeps
its own tree of every open document (odelint.engine.incremental) and the editor's unsaved
files (odelint.analysis.project), sent to it as they change. Its findings carry no fix: a
code action asks the engine for the fix anyway (`fix_source`), in the server.

The helper is never made on one core (nor under a container's quota of less than two CPUs),
where it would only compete, nor where `os.fork` is missing. Where ODL002 (unused `noqa`) is
selected, both shares come back with `noqa` unapplied, and the server judges the directives
against both. Forked twice, the helper is no child of the server's to reap; it exits when
the server's end of its pipe closes (the server exited, or shut down).
A helper that dies is noticed at once (its pipe closes); one that has not answered long after
the server finished its own share (`PATIENCE`) is killed. Either way the server lints every
rule itself from then on, and nothing the editor sees depends on the helper.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import struct
import threading
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # concurrent.futures is imported after the fork: it costs the helper 7 ms of its head start
    import concurrent.futures

    from odelint.engine.incremental import IncrementalParser
    from odelint.faces.server_lint import Linted

_LENGTH = struct.Struct("!Q")
FIRST, SHARE = "first", "share"  # what a request asks for
SHARED = "ODL7"  # the helper's share: arrays and randomness (key flow, tracing), as costly as the rest together
UNUSED_NOQA = "ODL002"  # judges every other rule's findings: the server's, on both shares together
PATIENCE = (2.0, 10.0)  # wait for the helper's share at least this long, or this many times the server's own share
# where a container's CPU limit is read: (quota, period) files, cgroup v2 first ("max 100000" in one file)
CPU_QUOTA_FILES: tuple[tuple[str, str | None], ...] = (
    ("/sys/fs/cgroup/cpu.max", None),
    ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
)


def start() -> Helper | None:
    """Fork the helper (before any thread exists); None where it would not help."""
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
    head = None
    if pid > 0:
        os.waitpid(pid, 0)  # the first fork, gone at once (it wrote its own child's pid first)
        head = _read_exactly(answer_read, _LENGTH.size)
    if head is None:
        os.close(request_write)
        os.close(answer_read)
        return None
    return Helper(request_write, answer_read, _LENGTH.unpack(head)[0])


def _cores() -> int:
    """The cores this process may run on, no more than a container's CPU quota allows."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    quota = _cpu_quota()
    return cores if quota is None else max(1, min(cores, int(quota)))


def _cpu_quota() -> float | None:
    """A container's CPU limit, in CPUs (cgroup v2's `cpu.max`, v1's CFS quota); None where
    there is none or it cannot be read. Docker's `--cpus=1` leaves every core in the affinity
    mask: two processes there would share one CPU's time, and the helper would only compete."""
    for quota_file, period_file in CPU_QUOTA_FILES:
        try:
            with open(quota_file) as file:
                fields = file.read().split()
            if period_file is not None:
                with open(period_file) as file:
                    fields = [fields[0], file.read().strip()]
            if fields[0] in ("max", "-1"):
                return None
            quota, period = float(fields[0]), float(fields[1])
        except (OSError, IndexError, ValueError):
            continue
        return quota / period if period > 0 else None
    return None


def shares(codes: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(the server's codes, the helper's): nothing for the helper where either share would
    have no rule to run (ODL002 runs on the findings of the others, in the server)."""
    theirs = frozenset(code for code in codes if code.startswith(SHARED))
    if not theirs or not codes - theirs - {UNUSED_NOQA}:
        return codes, frozenset()
    return codes - theirs, theirs


class Helper:
    """The server's end. A request is written by the thread that asks (a thread that would
    wait for its turn on the interpreter's lock first would start the helper's share 5 ms
    late), in the order asked; answers are read by a thread of their own, so that each reaches
    its asker whichever thread asked (the event loop for the first document, the lint thread
    after)."""

    def __init__(self, requests: int, answers: int, pid: int) -> None:
        self.pid = pid
        self.alive = True
        self._requests = requests
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # the turn to write a request: taken in the order asked
        self._waiting: dict[int, concurrent.futures.Future] = {}
        self._asked = 0
        self._files: dict[str, str] = {}  # the open files as the helper last heard of them
        self._first_open = True
        threading.Thread(target=self._read, args=(answers,), daemon=True, name="odelint-helper").start()

    def claim_first(self) -> bool:
        """True for the first document while the server has not loaded the engine itself."""
        with self._lock:
            claimed, self._first_open = self._first_open and self.alive, False
            return claimed

    def no_first(self) -> None:
        """The server has loaded the engine: the helper's lint of a first document would save nothing."""
        with self._lock:
            self._first_open = False

    def ask(self, request: dict[str, Any], open_files: Mapping[str, str],
            block: bool = True) -> concurrent.futures.Future:
        """Send a request (with the open files that changed since the last one); its answer,
        or None where the helper gives none, settles the future. Without `block` a thread of
        its own writes it (the event loop never waits on a pipe that a helper still loading
        the engine does not read yet), and the next request waits for that write."""
        from concurrent.futures import Future

        answer: Future = Future()
        with self._lock:
            if not self.alive:
                answer.set_result(None)
                return answer
            files: dict[str, str | None] = {path: text for path, text in open_files.items()
                                            if self._files.get(path) != text}
            files.update(dict.fromkeys(self._files.keys() - open_files.keys()))
            self._files = dict(open_files)
            data = pickle.dumps({**request, "number": self._asked, "files": files}, pickle.HIGHEST_PROTOCOL)
            self._waiting[self._asked] = answer
            self._asked += 1
            self._writing.acquire()  # released by `_write`, once written
        if block:
            self._write(data)
        else:
            threading.Thread(target=self._write, args=(data,), daemon=True, name="odelint-helper-ask").start()
        return answer

    def _write(self, data: bytes) -> None:
        """Write a request in the turn `ask` took for it; a pipe that fails ends the helper."""
        try:
            if self._requests >= 0:
                _send(self._requests, data)
        except OSError:
            self._close_requests()
            self._gone()
        finally:
            self._writing.release()

    def share(self, linted: Linted, codes: frozenset[str], open_files: Mapping[str, str],
              documents: Collection[str], apply_noqa: bool = True) -> concurrent.futures.Future:
        """Ask for the lint of `linted`'s text with `codes` (its settings as the server resolved
        them; without `apply_noqa`, every finding, suppressed or not); `documents`: the URIs
        whose trees the helper should keep."""
        return self.ask({"kind": SHARE, "uri": linted.uri, "text": linted.text, "path": linted.path,
                         "codes": codes, "versions": dict(linted.versions), "options": linted.options,
                         "apply_noqa": apply_noqa, "documents": list(documents)}, open_files)

    def answer(self, asked: concurrent.futures.Future, own_seconds: float) -> dict[str, Any] | None:
        """The answer, waiting as `PATIENCE` allows after the server's own share took
        `own_seconds`; None where there is none (a helper that let the time pass is killed)."""
        try:
            return asked.result(max(PATIENCE[0], PATIENCE[1] * own_seconds))
        except TimeoutError:
            self.kill()
            return None

    def close(self) -> None:
        """The server shuts down: the helper exits once it reads the end of its requests. One
        that does not take the request being written to it within `PATIENCE` is killed first."""
        if not self._writing.acquire(timeout=PATIENCE[0]):
            self.kill()  # the write in progress then fails, and gives up its turn
            self._writing.acquire()
        try:
            self._close_requests()
        finally:
            self._writing.release()

    def kill(self) -> None:
        with self._lock:
            # until its answers end, the pid is still the helper's; 0 or less would name a group
            if self.alive and self.pid > 0:
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except OSError:
                    pass
        self._gone()

    def _close_requests(self) -> None:
        """Only in a writing turn: no write is left to reach a file that takes the number."""
        with self._lock:
            if self._requests >= 0:
                os.close(self._requests)
                self._requests = -1
                self.alive = False

    def _gone(self) -> None:
        with self._lock:
            self.alive = False
            waiting, self._waiting = self._waiting, {}
        for answer in waiting.values():
            if not answer.done():
                answer.set_result(None)

    def _read(self, fd: int) -> None:
        try:
            while (data := _receive(fd)) is not None:
                number, given = pickle.loads(data)
                with self._lock:
                    answer = self._waiting.pop(number, None)
                if answer is not None and not answer.done():
                    answer.set_result(given)
        except Exception:  # nothing may reach the editor from here
            pass
        finally:
            self._gone()
            os.close(fd)


def _child(requests: int, answers: int, servers_ends: tuple[int, int]) -> None:
    """Never returns. Silent whatever happens: the server lints everything itself then."""
    try:
        pid = os.fork()
        if pid != 0:
            _send_raw(answers, _LENGTH.pack(pid))
            os._exit(0)
        for fd in servers_ends:
            os.close(fd)
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0)
        os.dup2(quiet, 1)  # the server's stdout is the editor's channel
        from odelint.engine.preload import load_linting

        load_linting(every_analysis=False)
        _serve(requests, answers)
    except BaseException:  # nothing may reach the editor from here
        pass
    os._exit(0)


def _serve(requests: int, answers: int) -> None:
    """Answer requests in order until the server's end closes."""
    import gc

    from odelint.engine.collector import IDLE_SECONDS, collect_if_piled_up
    from odelint.engine.incremental import IncrementalParser

    gc.disable()  # as the server's collector: never in a lint, when idle or piled up
    documents: dict[str, IncrementalParser] = {}
    files: dict[str, str] = {}
    while True:
        if not select.select([requests], [], [], IDLE_SECONDS)[0]:
            gc.collect()
        data = _receive(requests)
        if data is None:
            return
        request = pickle.loads(data)
        for path, text in request["files"].items():
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        if request["kind"] == SHARE:
            for uri in documents.keys() - set(request["documents"]):
                del documents[uri]
        parser = documents.setdefault(request["uri"], IncrementalParser())
        try:
            given = _lint(request, files, parser)
        except Exception:
            given = None  # the server lints this share itself
        _send(answers, pickle.dumps((request["number"], given), pickle.HIGHEST_PROTOCOL))
        if not parser.prepared:
            parser.prepare()  # as the server does, after the answer and before the next edit
        collect_if_piled_up()


def _lint(request: dict[str, Any], files: dict[str, str], parser: IncrementalParser) -> dict[str, Any]:
    """As the server lints: the first document with every rule its settings enable, a share
    with the codes and settings the server sent. Either keeps the document's tree for the next
    (the first document's share follows at once: it parses nothing again)."""
    from odelint.faces.server_lint import Linted, lint_buffer, lint_codes, resolver, share_buffers

    share_buffers(files)
    linted = Linted(request["uri"], None, request["text"], request["path"])
    if request["kind"] == FIRST:
        lint_buffer(linted, resolver(request["root"]), parser)
    else:
        linted.versions, linted.options = request["versions"], request["options"]
        lint_codes(linted, request["codes"], parser, request["apply_noqa"])
    return {"findings": [finding.to_dict() for finding in linted.findings], "crashes": linted.crashes,
            "config_error": linted.config_error, "depends": linted.depends}


def _send(fd: int, data: bytes) -> None:
    _send_raw(fd, _LENGTH.pack(len(data)) + data)


def _send_raw(fd: int, data: bytes) -> None:
    view = memoryview(data)
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
