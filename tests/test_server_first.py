"""The first document's lint in the process the server forks at start (odelint.faces.server_first).

Forking is tried only in fresh interpreters, as the server does it: before any thread exists."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_raw import SERVER, RawClient
from odelint.faces import server_first
from polling import wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the forked first lint needs os.fork")

# ODL201 (a safe fix) and ODL203; the project's settings switch ODL203 off.
TEXT = ("import equinox as eqx\nimport jax\nimport optax\n\n"
        "model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))\n"
        "optim = optax.adam(1e-3)\nopt_state = optim.init(model)\n"
        "other = optax.adamw(1e-3)\n\ndef step(grads, state):\n    return other.update(grads, state)\n")
SETTINGS = '[tool.odelint]\nignore = ["ODL203"]\n'

ASK = """
import json, sys
from odelint.faces import server_first
root, path = sys.argv[1], sys.argv[2]
text = open(path).read()
first = server_first.start()
request = {"root": root, "uri": "file://" + path, "version": 1, "text": text, "path": path,
           "open_files": {path: text}}
answer = first.exchange(request) if first is not None and first.claim() else None
engine_loaded_here = "odelint.engine.core" in sys.modules
from odelint.engine.incremental import IncrementalParser
from odelint.faces.server_lint import Linted, lint_buffer, resolver, share_buffers
share_buffers(request["open_files"])
own = lint_buffer(Linted(request["uri"], 1, text, path), resolver(root), IncrementalParser())
print(json.dumps({"answer": answer, "loaded_before_answer": engine_loaded_here,
                  "own": {"findings": [f.to_dict() for f in own.findings], "crashes": own.crashes,
                          "config_error": own.config_error}}))
"""

# Starts the child, then lets it go (`release`), exits without a word, or asks the killed child.
LEAVE = """
import os, sys
from odelint.faces import server_first
first = server_first.start()
print(os.getpid(), flush=True)
sys.stdin.readline()  # the test has seen the child
how = sys.argv[1]
if how == "release":
    first.release()
    sys.stdin.readline()
elif how == "kill":  # the test has killed the child
    print(first.claim() and first.exchange({"root": ".", "uri": "file:///x.py", "version": 1, "text": "",
                                            "path": "/x.py", "open_files": {}}), flush=True)
"""


def _two_cores() -> bool:
    return len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) >= 2


@pytest.mark.parametrize("name", ["train.py", "train.ipynb"])  # a notebook is linted as its cells' program
def test_the_forked_lint_answers_what_the_servers_own_lint_shows(tmp_path: Path, name: str) -> None:
    if not _two_cores():
        pytest.skip("the server forks only where there are two cores")
    (tmp_path / "pyproject.toml").write_text(SETTINGS)
    path = tmp_path / name
    path.write_text(TEXT)
    result = subprocess.run([sys.executable, "-c", ASK, str(tmp_path), str(path)], capture_output=True, text=True,
                            timeout=120, check=True)
    report = json.loads(result.stdout)
    answer, own = report["answer"], report["own"]
    assert not report["loaded_before_answer"]  # the findings came from the other process
    assert answer == own
    assert [(finding["code"], finding["fix_safety"]) for finding in answer["findings"]] == [("ODL201", "safe")]


def _processes_running(marker: str) -> list[int]:
    """The processes whose command line holds `marker` (read from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if marker.encode() in cmdline.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="counts processes through /proc")
@pytest.mark.parametrize("how", ["release", "exit", "kill"])
def test_the_child_goes_when_let_go_or_when_the_server_goes_and_a_dead_one_answers_nothing(
        tmp_path: Path, how: str) -> None:
    if not _two_cores():
        pytest.skip("the server forks only where there are two cores")
    marker = f"odelint-first-{how}-{os.getpid()}-{time.monotonic_ns()}"
    server = subprocess.Popen([sys.executable, "-c", LEAVE, how, marker], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(server.stdout.readline())
        assert wait_until(lambda: len(_processes_running(marker)) == 2, 60)
        [child] = [pid for pid in _processes_running(marker) if pid != server_pid]
        if how == "kill":
            os.kill(child, 9)
        server.stdin.write("\n")
        server.stdin.flush()
        if how == "kill":
            assert server.stdout.readline().strip() == "None"
        if how == "release":
            assert wait_until(lambda: _processes_running(marker) == [server_pid], 60)
        server.stdin.close()
        assert server.wait(60) == 0
        assert wait_until(lambda: not _processes_running(marker), 60)
    finally:
        server.kill()
        server.wait()


def _forked_child(server: int) -> int | None:
    """The live process the server (the leader of its own process group) forked to lint: in
    its group, but not its child (the fork in between has exited); read from /proc."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    state, parent, group = stat.read().rsplit(")", 1)[1].split()[:3]
            except OSError:
                continue
            if int(group) == server and int(entry) != server and int(parent) != server and state != "Z":
                return int(entry)
    return None


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the child through /proc")
@pytest.mark.asyncio
@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGSTOP], ids=["died", "stopped"])
async def test_a_server_whose_forked_child_died_or_hangs_lints_the_first_document_itself_and_exits(
        tmp_path: Path, signal_number: int) -> None:
    if not _two_cores():
        pytest.skip("the server forks only where there are two cores")
    process = await asyncio.create_subprocess_exec(*SERVER, stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    client = RawClient(process)
    child = None
    try:
        assert wait_until(lambda: _forked_child(process.pid) is not None, 60)
        child = _forked_child(process.pid)
        assert child is not None
        os.kill(child, signal_number)
        await client.initialize(tmp_path.as_uri())
        uri = (tmp_path / "train.py").as_uri()
        await client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": TEXT}}})
        published = await client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert published["params"]["version"] == 1
        assert [shown["code"] for shown in published["params"]["diagnostics"]] == ["ODL201", "ODL203"]
        await client.send({"id": 2, "method": "shutdown"})
        await client.wait_for(lambda m: m.get("id") == 2)
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(process.wait(), 30) == 0  # a child that never answers holds nothing up
    finally:
        await client.close()
        if child is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


def test_one_core_forks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fork() -> int:
        raise AssertionError("forked on one core")

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert server_first.start() is None


def test_a_document_claims_the_child_once_and_not_after_it_is_let_go() -> None:
    read, write = os.pipe()
    other_read, other_write = os.pipe()
    claimed = server_first.FirstLint(write, other_read)
    assert claimed.claim() and not claimed.claim()
    claimed.release()  # claimed: the exchange, not the release, ends it
    assert claimed._requests == write
    let_go = server_first.FirstLint(os.dup(write), os.dup(other_read))
    let_go.release()
    assert not let_go.claim()
    for fd in (read, write, other_read, other_write):
        os.close(fd)
