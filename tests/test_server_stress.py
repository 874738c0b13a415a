"""The language server under abuse: a thousand edits in a burst, and a client that vanishes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsp_raw import RawClient  # noqa: E402

pytestmark = pytest.mark.asyncio
ROOT = Path(__file__).resolve().parents[1]
HAZARD = "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = optax.adam(1e-3).init(model)\n"


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("VmRSS:"))


def _document(variant: int) -> str:
    """About 900 lines of real code with a finding whose line moves with the variant."""
    body = (ROOT / "lint" / "analysis" / "facts.py").read_text()
    return "import equinox as eqx\nimport optax\n" + "\n" * (variant % 7) + HAZARD + body + HAZARD


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read memory use")
async def test_a_thousand_rapid_edits_end_in_the_last_version_with_bounded_memory(tmp_path):
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        uri = (tmp_path / "big.py").as_uri()
        await client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 0, "text": _document(0)}}})
        await client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        for version in range(1, 51):  # warm up: caches, parser state, thread pool
            await client.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": _document(version)}]}})
        await client.wait_for(lambda m: m.get("params", {}).get("version") == 50, timeout=60)
        before = _rss_kib(client.process.pid)
        last = 1050
        for version in range(51, last + 1):
            await client.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": _document(version)}]}})
        final = await client.wait_for(lambda m: m.get("params", {}).get("version") == last, timeout=120)
        lines = [d["range"]["start"]["line"] for d in final["params"]["diagnostics"]]
        assert len(lines) == 2 and lines[0] == 3 + last % 7
        after = _rss_kib(client.process.pid)
        print(f"server RSS {before} KiB before and {after} KiB after 1,000 edits")
        assert after - before < 64 * 1024, f"RSS grew from {before} KiB to {after} KiB over 1,000 edits"
        await client.send({"id": 9, "method": "shutdown"})
        await client.wait_for(lambda m: m.get("id") == 9)
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(client.process.wait(), 30) == 0
    finally:
        await client.close()


async def test_a_vanished_client_makes_the_server_exit(tmp_path):
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        await client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": (tmp_path / "a.py").as_uri(), "languageId": "python", "version": 1, "text": _document(1)}}})
        client.process.stdin.close()  # the editor crashed: its end of the pipe is gone
        await asyncio.wait_for(client.process.wait(), 30)
    finally:
        await client.close()
