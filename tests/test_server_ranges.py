"""The language server offers a finding's quick fixes only where the editor asks (issue 26:
quick fixes outside the requested range went unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient
from test_server import ADAM, CONFIG, _start, actions_at, open_file, published

pytestmark = pytest.mark.asyncio

TWO_LINES = ADAM + "again = optax.rmsprop(0.1).init(model)\n"   # ODL201 on lines 7 and 8


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    async for _ in _start(lsp_client, tmp_path, types.ClientCapabilities()):
        yield


def _quick_fix_lines(actions: list[types.CodeAction]) -> list[int]:
    return [diagnostic.range.start.line for action in actions if action.kind == types.CodeActionKind.QuickFix
            for diagnostic in action.diagnostics or ()]


async def test_quick_fixes_are_offered_only_for_findings_in_the_requested_range(client: LanguageClient,
                                                                                tmp_path: Path) -> None:
    uri = open_file(client, tmp_path / "train.py", TWO_LINES)
    first, second = await published(client, uri, 1)
    assert (first.range.start.line, second.range.start.line) == (6, 7)
    on_first = await actions_at(client, uri, first.range)
    assert _quick_fix_lines(on_first) == [6, 6], [a.title for a in on_first]  # the fix and "Disable ODL201"
    on_second = await actions_at(client, uri, types.Range(second.range.end, second.range.end))
    assert _quick_fix_lines(on_second) == [7, 7]
    elsewhere = types.Range(types.Position(1, 0), types.Position(2, 3))
    assert _quick_fix_lines(await actions_at(client, uri, elsewhere)) == []
    both = types.Range(types.Position(6, 0), types.Position(7, 40))
    assert _quick_fix_lines(await actions_at(client, uri, both)) == [6, 6, 7, 7]
