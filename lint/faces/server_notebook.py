"""Notebook documents in the language server (LSP 3.17 `notebookDocument/*`).

pygls keeps the notebook and its cell documents in the workspace. A notebook's code cells
are linted as one program, exactly as `odelint check nb.ipynb` does, and every cell gets its
own diagnostics, positioned within the cell and published to the cell's document URI.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from odelint.engine.notebooks import place
from odelint.faces.server_text import Lines
from odelint.files.notebook import Notebook, join
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from odelint.faces.server_lsp import OdelintServer

SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])],
    save=True)


def is_notebook(ls: OdelintServer, uri: str) -> bool:
    return ls.workspace.get_notebook_document(notebook_uri=uri) is not None


def is_cell(ls: OdelintServer, uri: str) -> bool:
    return ls.workspace.get_notebook_document(cell_uri=uri) is not None


def _snapshot(ls: OdelintServer, uri: str) -> tuple[int, Notebook, dict[int, str]] | None:
    """(version, the joined program, {cell number: cell document URI}) of the open notebook."""
    document = ls.workspace.get_notebook_document(notebook_uri=uri)
    if document is None:
        return None
    code, uris = [], {}
    for index, cell in enumerate(document.cells):
        text = ls.workspace.text_documents.get(unquote(cell.document))
        if cell.kind != types.NotebookCellKind.Code or text is None or text.language_id not in (None, "python"):
            continue
        code.append((index, text.source))
        uris[index + 1] = cell.document
    return document.version, Notebook("", {}, *join(code)), uris


def _path(ls: OdelintServer, uri: str) -> str:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return path or os.path.join(ls.root(), os.path.basename(unquote(uri)) or "untitled.ipynb")


async def refresh(ls: OdelintServer, uri: str) -> None:
    """Lint the notebook as it is now and publish every code cell's diagnostics."""
    snapshot = _snapshot(ls, uri)
    if snapshot is None:
        return
    version, notebook, uris = snapshot
    linted = await ls.on_worker(ls.lint, uri, version, notebook.source, _path(ls, uri))
    now = ls.workspace.get_notebook_document(notebook_uri=uri)
    if now is None or now.version != version:
        return  # edited again while it was linted: the newer lint publishes
    for message in linted.crashes:
        ls.log(f"odelint: {linted.path}: {message}")
    by_cell: dict[str, list[types.Diagnostic]] = {cell_uri: [] for cell_uri in uris.values()}
    if linted.config_error is not None and uris:
        origin = types.Range(types.Position(0, 0), types.Position(0, 0))
        by_cell[next(iter(uris.values()))].append(types.Diagnostic(
            origin, f"configuration error: {linted.config_error}", severity=types.DiagnosticSeverity.Error,
            source="odelint"))
    cells = {cell.number: cell for cell in notebook.cells}
    for finding in place(linted.findings, notebook):
        cell_uri = uris.get(finding.cell)  # type: ignore[arg-type]
        if cell_uri is not None:
            by_cell[cell_uri].append(_diagnostic(finding, Lines(cells[finding.cell].text, ls.encoding)))
    for cell_uri in ls.notebook_cells.get(uri, set()) - set(by_cell):
        by_cell[cell_uri] = []  # a cell deleted, or no longer Python: clear what it showed
    ls.notebook_cells[uri] = set(uris.values())
    for cell_uri, diagnostics in by_cell.items():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=diagnostics))


def _diagnostic(finding, lines: Lines) -> types.Diagnostic:
    from odelint.faces.server_lsp import diagnostic

    return diagnostic(finding, lines)


def close(ls: OdelintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.parsers.pop(uri, None)
    cells = ls.notebook_cells.pop(uri, set()) | {cell.uri for cell in params.cell_text_documents}
    for cell_uri in cells:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))


def register(server: OdelintServer) -> None:
    """The notebook handlers (pygls has already updated its workspace when they run)."""

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: OdelintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: OdelintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, ls.debounce)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(ls: OdelintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: OdelintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        close(ls, params)
