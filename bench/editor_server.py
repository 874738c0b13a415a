"""The editor path through the real language server: wall time from a `didChange` to its
`publishDiagnostics`, in a ~1,000-line buffer, every rule on.

    python bench/editor_server.py [--edits 40] [--open-after SECONDS] [--in-largest]

Starts `odelint server --debounce 0` over stdio, opens bench/training_script.py (a real JAX
training script with findings in it), then types one digit at a time into a float
literal inside a function in the middle (bench/editor.py's `edit_site`), each as an incremental change, and waits
for the diagnostics of that version. Prints min, median, p95 and max wall milliseconds, and
apart from them the first lint after opening (it parses the whole buffer once; where the server
forked a helper at start, odelint.faces.server_helper, the helper's), how long the server took to answer
`initialize` from its start (Python, pygls and lsprotocol loading) and to show the first
diagnostics from its start (what a user waits for after opening a file in a new editor). Where
/proc tells a process's CPU time (Linux), it prints the CPU per edit too (the server's and its
helper's): a tail in wall time that the CPU time lacks is the machine's, not the server's work.

A shared machine's speed moves from minute to minute (the 2-core machine of bench/RESULTS.md
runs the same code at two speeds, 1.6x apart), so the bench also times a fixed workload that
is none of odelint's code, LibCST parsing the same buffer, before the server starts and after
it stops, and prints each figure in those parses too: runs are compared by those. odelint's
modules are byte-compiled first, as an install leaves them (`bench/run.py`'s `compile_odelint`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from editor import buffer, edit_site  # noqa: E402 - the same buffer and edits as the in-process bench
from run import compile_odelint  # noqa: E402 - odelint as an install leaves it, as bench/run.py times it

_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
URI = "file:///project/train.py"  # not under bench/: key reuse in benchmarks is quiet by design


class Client:
    """Just enough JSON-RPC over the server's pipes."""

    def __init__(self, command: list[str]) -> None:
        # a session of its own: the helper it forks (odelint.faces.server_helper) is found by it
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, start_new_session=True)

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def receive(self) -> dict:
        assert self.process.stdout is not None
        length = 0
        while (header := self.process.stdout.readline()) not in (b"\r\n", b""):
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        return json.loads(self.process.stdout.read(length))

    def diagnostics(self, version: int) -> dict:
        while True:
            message = self.receive()
            params = message.get("params") or {}
            if message.get("method") == "textDocument/publishDiagnostics" and params.get("version") == version:
                return params

    def cpu_ms(self) -> float | None:
        """The user + system CPU so far of the server and its helper process (every process of
        the server's session), from /proc (None where there is none)."""
        if not Path("/proc/self/stat").exists():
            return None
        total = 0
        for entry in Path("/proc").iterdir():
            try:
                fields = (entry / "stat").read_text().rpartition(")")[2].split() if entry.name.isdigit() else ()
            except OSError:
                continue
            if fields and int(fields[3]) == self.process.pid:
                total += int(fields[11]) + int(fields[12])
        return total * 1000 / _CLOCK_TICKS

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


def parse_ms(text: str, rounds: int = 3) -> float:
    """The fastest of `rounds` LibCST parses of `text`, in this process: the machine's speed now."""
    from libcst import parse_module

    fastest = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        parse_module(text)
        fastest = min(fastest, time.perf_counter() - start)
    return fastest * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--open-after", type=float, default=0.0, metavar="SECONDS",
                        help="wait this long after `initialized` before opening the buffer (an editor's "
                             "start-up; the server loads the engine meanwhile)")
    parser.add_argument("--in-largest", action="store_true",
                        help="type inside the largest top-level statement (a long class or function)")
    args = parser.parse_args()
    # Where PYTHONDONTWRITEBYTECODE is set, a module changed since its .pyc was written would be
    # compiled by every server while the buffer waits for its first lint, as no install does.
    compile_odelint()
    command = [sys.executable, "-m", "odelint", "server", "--debounce", "0"]
    lines = buffer()
    parse_before = parse_ms("".join(lines))
    started = time.monotonic()
    client = Client(command)
    try:
        client.send({"id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": None, "capabilities": {}}})
        while client.receive().get("id") != 1:
            pass
        initialize_ms = (time.monotonic() - started) * 1000
        client.send({"method": "initialized", "params": {}})
        time.sleep(args.open_after)
        opened = time.monotonic()
        client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": URI, "languageId": "python", "version": 0, "text": "".join(lines)}}})
        first = client.diagnostics(0)
        first_ms = (time.monotonic() - opened) * 1000
        shown_ms = (time.monotonic() - started) * 1000
        line, column = edit_site(lines, args.in_largest)
        samples, cpu = [], []
        for edit in range(1, args.edits + 1):
            lines[line] = lines[line][:column] + "1" + lines[line][column:]
            change = {"range": {"start": {"line": line, "character": column},
                                "end": {"line": line, "character": column}}, "text": "1"}
            used = client.cpu_ms()  # before the clock starts: it reads every process's /proc entry
            start = time.monotonic()
            client.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": URI, "version": edit}, "contentChanges": [change]}})
            result = client.diagnostics(edit)
            samples.append((time.monotonic() - start) * 1000)
            after = client.cpu_ms()
            if used is not None and after is not None:
                cpu.append(after - used)
    finally:
        client.close()
    parse_after = parse_ms("".join(lines))
    samples.sort()
    p95 = _p95(samples)
    print(f"{len(lines)} lines, {len(first['diagnostics'])} diagnostics first, {len(result['diagnostics'])} after; "
          f"{args.edits} edits through the server: min {samples[0]:.0f} ms, "
          f"median {statistics.median(samples):.0f} ms, "
          f"p95 {p95:.0f} ms, max {samples[-1]:.0f} ms wall; first lint after didOpen {first_ms:.0f} ms wall "
          f"(the server answered `initialize` {initialize_ms:.0f} ms after it was started, and showed the first "
          f"diagnostics {shown_ms:.0f} ms after its start)")
    parse = (parse_before + parse_after) / 2
    print(f"the machine's speed: LibCST parses the buffer in {parse_before:.0f} ms before the server "
          f"starts, {parse_after:.0f} ms after it stops; in those parses (their mean), median "
          f"{statistics.median(samples) / parse:.2f}, p95 {p95 / parse:.2f}, first lint {first_ms / parse:.2f}")
    if cpu:
        cpu.sort()
        print(f"server CPU per edit, its helper's included (clock ticks of {1000 / _CLOCK_TICKS:.0f} ms): "
              f"median {statistics.median(cpu):.0f} ms, p95 {_p95(cpu):.0f} ms, max {cpu[-1]:.0f} ms")
    return 0


def _p95(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


if __name__ == "__main__":
    raise SystemExit(main())
