"""The language server on notebook documents (`notebookDocument/*`), driven over stdio with pytest-lsp."""

from __future__ import annotations

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402
from test_server import CONFIG, DEBOUNCE, _start, published  # noqa: E402

pytestmark = pytest.mark.asyncio

SETUP = "%matplotlib inline\n!pip list\nimport equinox as eqx\nimport jax\nimport optax"
HAZARD = ("model = eqx.nn.MLP(2, 2, 8, 1, key=jax.random.key(0))\noptim = optax.adamw(1e-3)\n"
          "opt_state = optim.init(model)")
CAPABILITIES = types.ClientCapabilities(notebook_document=types.NotebookDocumentClientCapabilities(
    synchronization=types.NotebookDocumentSyncClientCapabilities()))


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path):
    async for _ in _start(lsp_client, tmp_path, CAPABILITIES):
        yield


def cell_uri(notebook: str, number: int) -> str:
    return f"vscode-notebook-cell:{notebook.removeprefix('file://')}#cell{number}"


def open_notebook(client: LanguageClient, uri: str, cells: list[tuple[types.NotebookCellKind, str, str]]) -> None:
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=[
            types.NotebookCell(kind=kind, document=cell_uri(uri, number))
            for number, (kind, _, _) in enumerate(cells)]),
        cell_text_documents=[types.TextDocumentItem(uri=cell_uri(uri, number), language_id=language, version=1,
                                                    text=text) for number, (_, language, text) in enumerate(cells)]))


async def test_server_advertises_notebook_sync_for_python_cells(client: LanguageClient) -> None:
    sync = client.initialize_result.capabilities.notebook_document_sync
    [selector] = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook"
    assert [cell.language for cell in selector.cells] == ["python"]


async def test_diagnostics_go_to_the_cell_with_positions_inside_it(client: LanguageClient, tmp_path) -> None:
    uri = (tmp_path / "train.ipynb").as_uri()
    code, markdown = types.NotebookCellKind.Code, types.NotebookCellKind.Markup
    open_notebook(client, uri, [(markdown, "markdown", "# Training"), (code, "python", SETUP),
                                (code, "python", HAZARD)])
    [diagnostic] = await published(client, cell_uri(uri, 2), None)
    assert diagnostic.code == "ODL201"
    assert diagnostic.range == types.Range(types.Position(2, 23), types.Position(2, 28))
    assert await published(client, cell_uri(uri, 1), None) == []  # the magics are not syntax errors

    # Editing the cell (the fix typed by hand) clears its diagnostic.
    after = len(client.published)
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=uri, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell_uri(uri, 2), version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(
                    text=HAZARD.replace("init(model)", "init(eqx.filter(model, eqx.is_array))"))])]))))
    assert await published(client, cell_uri(uri, 2), None, after=after, timeout=30 + DEBOUNCE) == []

    # Closing the notebook clears every cell.
    after = len(client.published)
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=uri),
        cell_text_documents=[types.TextDocumentIdentifier(cell_uri(uri, number)) for number in range(3)]))
    assert await published(client, cell_uri(uri, 1), None, after=after) == []


async def test_a_name_defined_in_one_cell_is_known_in_the_next(client: LanguageClient, tmp_path) -> None:
    uri = (tmp_path / "split.ipynb").as_uri()
    code = types.NotebookCellKind.Code
    first, second = HAZARD.rsplit("\n", 1)
    open_notebook(client, uri, [(code, "python", SETUP), (code, "python", first), (code, "python", second)])
    [diagnostic] = await published(client, cell_uri(uri, 2), None)
    assert diagnostic.code == "ODL201"
    assert diagnostic.range.start == types.Position(0, 23)


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    [edit] = edits
    lines = text.splitlines(keepends=True) + [""]
    start = sum(len(line) for line in lines[:edit.range.start.line]) + edit.range.start.character
    end = sum(len(line) for line in lines[:edit.range.end.line]) + edit.range.end.character
    return text[:start] + edit.new_text + text[end:]


async def test_quick_fix_and_noqa_actions_edit_only_the_cell(client: LanguageClient, tmp_path) -> None:
    uri = (tmp_path / "train.ipynb").as_uri()
    code = types.NotebookCellKind.Code
    open_notebook(client, uri, [(code, "python", SETUP), (code, "python", HAZARD)])
    [diagnostic] = await published(client, cell_uri(uri, 1), None)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(cell_uri(uri, 1)), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    # answered from the server's own lint: each cell shown once, though the forked first lint came first
    assert [params.uri for params in client.published].count(cell_uri(uri, 1)) == 1
    fix, disable = actions
    assert fix.title.startswith("ODL201: ") and fix.is_preferred
    assert list(fix.edit.changes) == [cell_uri(uri, 1)]
    assert _apply(HAZARD, fix.edit.changes[cell_uri(uri, 1)]) == HAZARD.replace(
        "init(model)", "init(eqx.filter(model, eqx.is_array))")
    assert disable.title == "Disable ODL201 for this line"
    assert _apply(HAZARD, disable.edit.changes[cell_uri(uri, 1)]) == HAZARD + "  # noqa: ODL201"

    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(cell_uri(uri, 0)),
        range=types.Range(types.Position(0, 0), types.Position(0, 0)),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.odelint"])))
    [fix_all] = actions
    assert list(fix_all.edit.changes) == [cell_uri(uri, 1)]  # the setup cell with its magics is untouched


async def test_fix_all_puts_an_added_import_in_the_cell_that_needs_it_not_a_bash_cell(
        client: LanguageClient, tmp_path) -> None:
    uri = (tmp_path / "bash.ipynb").as_uri()
    code = types.NotebookCellKind.Code
    imports = "from equinox.nn import MLP\nfrom optax import adam as Adam\n"
    use = "def main(key):\n    model = MLP(2, 2, 8, 1, key=key)\n    return Adam(1e-3).init(model)\n"
    open_notebook(client, uri, [(code, "python", imports), (code, "python", "%%bash\necho hi\n"),
                                (code, "python", use)])
    [diagnostic] = await published(client, cell_uri(uri, 2), None)
    assert diagnostic.code == "ODL201"
    [fix_all] = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(cell_uri(uri, 2)), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.odelint"])))
    assert list(fix_all.edit.changes) == [cell_uri(uri, 2)]  # neither the imports' cell nor the bash cell
    assert _apply(use, fix_all.edit.changes[cell_uri(uri, 2)]) == "import equinox as eqx\n" + use.replace(
        "init(model)", "init(eqx.filter(model, eqx.is_array))")
