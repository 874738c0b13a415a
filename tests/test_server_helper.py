"""The helper process the server forks at start (odelint.faces.server_helper): the first
document's lint while the server loads, then one share of the rules on every lint.

Forking is tried only in fresh interpreters, as the server does it: before any thread exists."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_raw import SERVER, RawClient
from odelint.faces import server_helper
from polling import wait_until

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the helper process needs os.fork")

# ODL201 (a safe fix), ODL203 and ODL704 (the helper's share); the project's settings switch ODL203 off.
TEXT = ("import equinox as eqx\nimport jax\nimport optax\n\n"
        "model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))\n"
        "optim = optax.adam(1e-3)\nopt_state = optim.init(model)\n"
        "other = optax.adamw(1e-3)\n\ndef step(grads, state):\n    return other.update(grads, state)\n\n"
        "def noise(key):\n    a = jax.random.normal(key, (2,))\n    b = jax.random.normal(key, (2,))\n"
        "    return a + b\n")
SETTINGS = '[tool.odelint]\nignore = ["ODL203"]\n'

ASK = """
import json, sys
from odelint.faces import server_helper
root, path = sys.argv[1], sys.argv[2]
text = open(path).read()
helper = server_helper.start()
files = {path: text}
asked = (helper.ask({"kind": server_helper.FIRST, "root": root, "uri": "file://" + path, "text": text, "path": path},
                    files, block=False) if helper is not None and helper.claim_first() else None)
answer = asked.result(120) if asked is not None else None
engine_loaded_here = "odelint.engine.core" in sys.modules
from odelint.engine.incremental import IncrementalParser
from odelint.faces.server_lint import Linted, lint_buffer, resolver, share_buffers
share_buffers(files)
own = lint_buffer(Linted("file://" + path, 1, text, path), resolver(root), IncrementalParser())
print(json.dumps({"answer": answer and {key: answer[key] for key in ("findings", "crashes", "config_error")},
                  "loaded_before_answer": engine_loaded_here,
                  "own": {"findings": [f.to_dict() for f in own.findings], "crashes": own.crashes,
                          "config_error": own.config_error}}))
"""

# Lints versions of a document split with the helper and in this process alone; `stop` first
# kills the helper (SIGKILL) or stops it (SIGSTOP) after the first version.
SPLIT = """
import json, os, signal, sys
from odelint.faces import server_helper
root, path, versions, stop = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
helper = server_helper.start()
from odelint.engine.incremental import IncrementalParser
from odelint.faces import server_lint
from odelint.faces.server_lint import Linted, Split, lint_buffer, resolver, share_buffers
here = []  # the codes each engine call in this process ran
engine = server_lint.lint_codes
server_lint.lint_codes = lambda linted, codes, *rest, **named: (here.append(sorted(codes))
                                                                or engine(linted, codes, *rest, **named))
settings, uri = resolver(root), "file://" + path
split_parser, alone_parser = IncrementalParser(), IncrementalParser()
report = []
for number, text in enumerate(versions, 1):
    if number == 2 and stop != "none":
        os.kill(helper.pid, getattr(signal, stop))
    files = {path: text}
    share_buffers(files)
    del here[:]
    split = lint_buffer(Linted(uri, number, text, path), settings, split_parser, Split(helper, files, [uri]))
    split_here = list(here)
    alone = lint_buffer(Linted(uri, number, text, path), settings, alone_parser)
    report.append({"split": split.shown(), "alone": alone.shown(), "here": split_here,
                   "depends": [sorted(split.depends), sorted(alone.depends)], "alive": helper.alive})
print(json.dumps({"report": report, "helper": helper.pid}))
"""

# Starts the helper, then closes it, exits without a word, or asks the killed helper.
LEAVE = """
import os, sys
from odelint.faces import server_helper
helper = server_helper.start()
print(os.getpid(), flush=True)
sys.stdin.readline()  # the test has seen the helper
how = sys.argv[1]
if how == "close":
    helper.close()
    sys.stdin.readline()
elif how == "kill":  # the test has killed the helper
    asked = helper.ask({"kind": server_helper.FIRST, "root": ".", "uri": "file:///x.py", "text": "",
                        "path": "/x.py"}, {}, block=False) if helper.claim_first() else None
    print(asked.result(60) if asked is not None else "unclaimed", flush=True)
"""


def _two_cores() -> bool:
    return len(os.sched_getaffinity(0)) >= 2 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) >= 2


needs_two_cores = pytest.mark.skipif(not _two_cores(), reason="the server forks only where there are two cores")


@needs_two_cores
@pytest.mark.parametrize("name", ["train.py", "train.ipynb"])  # a notebook is linted as its cells' program
def test_the_helpers_first_lint_answers_what_the_servers_own_lint_shows(tmp_path: Path, name: str) -> None:
    (tmp_path / "pyproject.toml").write_text(SETTINGS)
    path = tmp_path / name
    path.write_text(TEXT)
    result = subprocess.run([sys.executable, "-c", ASK, str(tmp_path), str(path)], capture_output=True, text=True,
                            timeout=120, check=True)
    report = json.loads(result.stdout)
    answer, own = report["answer"], report["own"]
    assert not report["loaded_before_answer"]  # the findings came from the other process
    assert answer == own
    assert [(finding["code"], finding["fix_safety"]) for finding in answer["findings"]] == [
        ("ODL201", "safe"), ("ODL704", None)]


# A keystroke at a time: the reused key made fresh (ODL704 goes), then the optimiser's line edited.
VERSIONS = [TEXT, TEXT.replace("    b = jax.random.normal(key", "    b = jax.random.normal(jax.random.split(key)[1]"),
            TEXT.replace("optax.adam(1e-3)", "optax.adam(1e-4)")]


def _split(tmp_path: Path, stop: str, settings: str = SETTINGS, versions: list[str] = VERSIONS) -> dict:
    (tmp_path / "pyproject.toml").write_text(settings)
    path = tmp_path / "train.py"
    path.write_text(versions[0])
    result = subprocess.run([sys.executable, "-c", SPLIT, str(tmp_path), str(path), json.dumps(versions), stop],
                            capture_output=True, text=True, timeout=120, check=True)
    return json.loads(result.stdout)


@needs_two_cores
def test_every_lint_is_split_with_the_helper_and_shows_what_one_process_shows(tmp_path: Path) -> None:
    report = _split(tmp_path, "none")["report"]
    for lint in report:
        assert lint["split"] == lint["alone"]
        assert lint["depends"][0] == lint["depends"][1]  # the project files the helper read count too
        [codes] = lint["here"]  # one engine call here, without the helper's share
        assert codes and not any(code.startswith(server_helper.SHARED) for code in codes)
        assert lint["alive"]
    shown = [[(finding["code"], finding["line"]) for finding in lint["split"][0]] for lint in report]
    assert shown == [[("ODL201", 7), ("ODL704", 15)], [("ODL201", 7)], [("ODL201", 7), ("ODL704", 15)]]
    [first] = report[0]["split"][0][:1]
    assert first["fixable"] and first["fix_safety"] == "safe"


@needs_two_cores
def test_with_unused_noqa_selected_the_server_judges_the_directives_against_both_shares(tmp_path: Path) -> None:
    """`# noqa: ODL704` on the reuse suppresses a finding of the helper's share: it is used. One
    naming ODL201 where there is none, and ODL704 beside a used ODL201, are not."""
    noted = (TEXT.replace("key=jax.random.PRNGKey(0))\n", "key=jax.random.PRNGKey(0))  # noqa: ODL201\n")
             .replace("optim.init(model)\n", "optim.init(model)  # noqa: ODL201, ODL704\n")
             .replace("b = jax.random.normal(key, (2,))\n", "b = jax.random.normal(key, (2,))  # noqa: ODL704\n"))
    report = _split(tmp_path, "none", '[tool.odelint]\nextend-select = ["ODL002"]\nignore = ["ODL203"]\n',
                    [noted, noted.replace("adam(1e-3)", "adam(1e-4)")])["report"]
    for lint in report:
        assert lint["split"] == lint["alone"]
        [codes] = lint["here"]
        assert not any(code.startswith(server_helper.SHARED) or code == "ODL002" for code in codes)
        assert [(finding["code"], finding["line"]) for finding in lint["split"][0]] == [("ODL002", 5), ("ODL002", 7)]


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (None when it has gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@needs_two_cores
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="reads the helper's state from /proc")
@pytest.mark.parametrize("stop", ["SIGKILL", "SIGSTOP"], ids=["died", "stopped"])
def test_a_helper_that_died_or_stopped_answering_leaves_every_rule_to_the_server(tmp_path: Path, stop: str) -> None:
    result = _split(tmp_path, stop)
    report = result["report"]
    try:
        assert report[0]["alive"] and len(report[0]["here"]) == 1
        for lint in report[1:]:
            assert lint["split"] == lint["alone"]
            assert not lint["alive"]
            assert any(code.startswith(server_helper.SHARED) for codes in lint["here"] for code in codes)
        assert [finding["code"] for finding in report[2]["split"][0]] == ["ODL201", "ODL704"]
        assert wait_until(lambda: _state(result["helper"]) in (None, "Z", "X"), 30)  # a stopped one is killed
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(result["helper"], signal.SIGKILL)


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


@needs_two_cores
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="counts processes through /proc")
@pytest.mark.parametrize("how", ["close", "exit", "kill"])
def test_the_helper_goes_when_closed_or_when_the_server_goes_and_a_dead_one_answers_nothing(
        tmp_path: Path, how: str) -> None:
    marker = f"odelint-helper-{how}-{os.getpid()}-{time.monotonic_ns()}"
    server = subprocess.Popen([sys.executable, "-c", LEAVE, how, marker], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        server_pid = int(server.stdout.readline())
        assert wait_until(lambda: len(_processes_running(marker)) == 2, 60)
        [helper] = [pid for pid in _processes_running(marker) if pid != server_pid]
        if how == "kill":
            os.kill(helper, 9)
        server.stdin.write("\n")
        server.stdin.flush()
        if how == "kill":
            assert server.stdout.readline().strip() in ("None", "unclaimed")
        if how == "close":
            assert wait_until(lambda: _processes_running(marker) == [server_pid], 60)
        server.stdin.close()
        assert server.wait(60) == 0
        assert wait_until(lambda: not _processes_running(marker), 60)
    finally:
        server.kill()
        server.wait()


def _helper_of(server: int) -> int | None:
    """The live process the server (the leader of its own process group) forked to help: in
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


@needs_two_cores
@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the helper through /proc")
@pytest.mark.asyncio
@pytest.mark.parametrize("signal_number", [signal.SIGKILL, signal.SIGSTOP], ids=["died", "stopped"])
async def test_a_server_whose_helper_died_or_hangs_lints_every_document_itself_and_exits(
        tmp_path: Path, signal_number: int) -> None:
    process = await asyncio.create_subprocess_exec(*SERVER, stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    client = RawClient(process)
    helper = None
    try:
        assert wait_until(lambda: _helper_of(process.pid) is not None, 60)
        helper = _helper_of(process.pid)
        assert helper is not None
        os.kill(helper, signal_number)
        await client.initialize(tmp_path.as_uri())
        uri = (tmp_path / "train.py").as_uri()
        await client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": TEXT}}})
        for version, text in enumerate(VERSIONS[:2], 1):
            if version > 1:
                await client.send({"method": "textDocument/didChange", "params": {
                    "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}})
            published = await client.wait_for(lambda m, version=version: m.get("method") == (
                "textDocument/publishDiagnostics") and m["params"]["version"] == version)
            shown = [diagnostic["code"] for diagnostic in published["params"]["diagnostics"]]
            assert shown == ["ODL201", "ODL203", "ODL704"][:3 if version == 1 else 2]
        await client.send({"id": 2, "method": "shutdown"})
        await client.wait_for(lambda m: m.get("id") == 2)
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(process.wait(), 30) == 0  # a helper that never answers holds nothing up
    finally:
        await client.close()
        if helper is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(helper, signal.SIGKILL)


def test_one_core_forks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fork() -> int:
        raise AssertionError("forked on one core")

    monkeypatch.setattr(os, "fork", fork)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert server_helper.start() is None


@pytest.mark.parametrize("files, cores", [
    ({"cpu.max": "100000 100000\n"}, 1),                       # docker --cpus=1 (cgroup v2)
    ({"cpu.max": "150000 100000\n"}, 1),                       # 1.5 CPUs: not two
    ({"cpu.max": "max 100000\n"}, 4),                          # no limit
    ({"quota": "100000\n", "period": "100000\n"}, 1),          # cgroup v1
    ({"quota": "-1\n", "period": "100000\n"}, 4),
    ({"quota": "400000\n", "period": "100000\n"}, 4),
    ({}, 4),                                                    # nothing to read
])
def test_a_containers_cpu_quota_caps_the_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               files: dict[str, str], cores: int) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(server_helper, "CPU_QUOTA_FILES", (
        (str(tmp_path / "cpu.max"), None), (str(tmp_path / "quota"), str(tmp_path / "period"))))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    assert server_helper._cores() == cores
    if cores == 1:
        monkeypatch.setattr(os, "fork", lambda: pytest.fail("forked under a quota of one CPU"))
        assert server_helper.start() is None


@pytest.mark.parametrize("codes, own, theirs", [
    ({"ODL201", "ODL601", "ODL704", "ODL707"}, {"ODL201", "ODL601"}, {"ODL704", "ODL707"}),
    ({"ODL201", "ODL601"}, {"ODL201", "ODL601"}, set()),          # nothing of the helper's family
    ({"ODL704", "ODL707"}, {"ODL704", "ODL707"}, set()),          # nothing left to the server: no split
    ({"ODL002", "ODL201", "ODL704"}, {"ODL002", "ODL201"}, {"ODL704"}),  # unused noqa: judged in the server
    ({"ODL002", "ODL704"}, {"ODL002", "ODL704"}, set()),          # ODL002 alone would be left to the server
])
def test_the_shares_of_the_rules(codes: set[str], own: set[str], theirs: set[str]) -> None:
    assert server_helper.shares(frozenset(codes)) == (frozenset(own), frozenset(theirs))


@contextlib.contextmanager
def _helper_on_pipes():
    """A Helper whose process is this test: the requests it writes and the answers it reads."""
    requests_read, requests_write = os.pipe()
    answers_read, answers_write = os.pipe()
    helper = server_helper.Helper(requests_write, answers_read, pid=-1)
    try:
        yield helper, requests_read, answers_write
    finally:
        helper.close()
        os.close(answers_write)  # the reading thread ends, and closes its end
        os.close(requests_read)


def test_killing_signals_only_the_helpers_own_pid(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pid of 0 or less names a process group (-1: every process the user may signal)."""
    signalled: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, number: signalled.append(pid))
    with _helper_on_pipes() as (helper, _, _):
        asked = helper.ask({"kind": "x"}, {})
        helper.kill()
        assert signalled == [] and not helper.alive and asked.result(10) is None
    with _helper_on_pipes() as (helper, _, _):
        helper.pid = 4242
        helper.kill()
        helper.kill()  # gone already: its pid may be another process's by now
        assert signalled == [4242]


def test_the_first_document_is_claimed_once_and_not_after_the_server_has_loaded() -> None:
    with _helper_on_pipes() as (helper, _, _):
        assert helper.claim_first() and not helper.claim_first()
    with _helper_on_pipes() as (helper, _, _):
        helper.no_first()
        assert not helper.claim_first()


def test_requests_carry_only_the_open_files_that_changed_and_answers_reach_their_askers() -> None:
    with _helper_on_pipes() as (helper, requests, answers):
        first = helper.ask({"kind": "x"}, {"/a.py": "a = 1\n", "/b.py": "b = 1\n"})
        second = helper.ask({"kind": "y"}, {"/a.py": "a = 2\n"})
        sent = [pickle.loads(server_helper._receive(requests)) for _ in range(2)]
        assert [(request["number"], request["files"]) for request in sent] == [
            (0, {"/a.py": "a = 1\n", "/b.py": "b = 1\n"}), (1, {"/a.py": "a = 2\n", "/b.py": None})]
        server_helper._send(answers, pickle.dumps((1, {"for": "second"})))  # out of order: matched by number
        server_helper._send(answers, pickle.dumps((0, {"for": "first"})))
        assert second.result(10) == {"for": "second"} and first.result(10) == {"for": "first"}


def test_the_event_loop_never_waits_on_a_full_pipe_and_requests_keep_their_order() -> None:
    with _helper_on_pipes() as (helper, requests, answers):
        started = time.monotonic()
        large = helper.ask({"kind": "x", "text": "x" * (4 << 20)}, {}, block=False)  # more than a pipe holds
        assert time.monotonic() - started < 5 and not large.done()
        after = concurrent.futures.ThreadPoolExecutor(1).submit(helper.ask, {"kind": "y"}, {})
        assert [pickle.loads(server_helper._receive(requests))["kind"] for _ in range(2)] == ["x", "y"]
        helper._gone()  # as when its pipe closes
        assert large.result(10) is None and after.result(10).result(10) is None and not helper.alive
        assert helper.ask({"kind": "z"}, {}).result(0) is None
