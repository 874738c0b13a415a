"""Notebook documents in the language server (LSP 3.17 `notebookDocument/*`).

pygls keeps the notebook and its cell documents in the workspace. A notebook's code cells
are linted as one program, exactly as `odelint check nb.ipynb` does, and every cell gets its
own diagnostics, positioned within the cell and published to the cell's document URI. Code
actions on a cell fix the program and hand back one edit per cell that changed.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from odelint.api.engine_rules import SyntaxErrorRule
from odelint.api.finding import Finding, Safety
from odelint.engine import noqa
from odelint.engine.core import fix_source
from odelint.engine.notebooks import place
from odelint.faces.server_text import Lines, minimal_edit
from odelint.files.notebook import NotebookError, Program
from pygls.uris import to_fs_path

if TYPE_CHECKING:
    from odelint.faces.server_lint import Linted
    from odelint.faces.server_lsp import OdelintServer


@dataclasses.dataclass
class LintedNotebook:
    """One lint of one version of a notebook: the program's findings and where each cell lies."""

    version: int
    notebook: Program
    uris: dict[int, str]      # cell number -> cell document URI
    linted: Linted            # findings in program lines
    placed: list[Finding]     # the same findings, in cell lines

    def number_of(self, cell_uri: str) -> int | None:
        return next((number for number, uri in self.uris.items() if unquote(uri) == unquote(cell_uri)), None)

    def lines(self, number: int, encoding: str) -> Lines:
        return Lines(next(cell.text for cell in self.notebook.cells if cell.number == number), encoding)


SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")])],
    save=True)


def is_notebook(ls: OdelintServer, uri: str) -> bool:
    return ls.workspace.get_notebook_document(notebook_uri=uri) is not None


def is_cell(ls: OdelintServer, uri: str) -> bool:
    return ls.workspace.get_notebook_document(cell_uri=uri) is not None


def _snapshot(ls: OdelintServer, uri: str) -> tuple[int, Program, dict[int, str]] | None:
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
    return document.version, Program.of(code), uris


def _path(ls: OdelintServer, uri: str) -> str:
    path = to_fs_path(uri) if uri.startswith("file:") else None
    return path or os.path.join(ls.root(), os.path.basename(unquote(uri)) or "untitled.ipynb")


async def refresh(ls: OdelintServer, uri: str) -> LintedNotebook | None:
    """The lint of the notebook as it is now (linting it and publishing every code cell's
    diagnostics if needed)."""
    snapshot = _snapshot(ls, uri)
    if snapshot is None:
        return None
    version, notebook, uris = snapshot
    known = ls.notebooks.get(unquote(uri))
    if known is not None and known.version == version and known.notebook.source == notebook.source:
        return known
    path = _path(ls, uri)

    def unchanged() -> bool:
        now = ls.workspace.get_notebook_document(notebook_uri=uri)
        return now is not None and now.version == version

    def state_of(linted: Linted) -> LintedNotebook:
        return LintedNotebook(version, notebook, uris, linted, place(linted.findings, notebook))

    linted, early = await ls.lint_showing_early(uri, version, notebook.source, path, unchanged,
                                                lambda early: _publish(ls, uri, state_of(early)))
    if not unchanged():
        return None  # edited again while it was linted: the newer lint publishes
    state = state_of(linted)
    previous = ls.notebooks.get(unquote(uri))
    if not linted.already_shown(early, previous.linted if previous is not None else None):
        _publish(ls, uri, state)
    ls.notebooks[unquote(uri)] = state
    return state


def _publish(ls: OdelintServer, uri: str, state: LintedNotebook) -> None:
    """Every code cell's diagnostics (and none for a cell that has gone since the last lint)."""
    linted, uris = state.linted, state.uris
    for message in linted.crashes:
        ls.log(f"odelint: {linted.path}: {message}")
    by_cell: dict[str, list[types.Diagnostic]] = {cell_uri: [] for cell_uri in uris.values()}
    if linted.config_error is not None and uris:
        origin = types.Range(types.Position(0, 0), types.Position(0, 0))
        by_cell[next(iter(uris.values()))].append(types.Diagnostic(
            origin, f"configuration error: {linted.config_error}", severity=types.DiagnosticSeverity.Error,
            source="odelint"))
    for finding in state.placed:
        number = finding.cell or 0
        if number in uris:
            by_cell[uris[number]].append(_lsp().diagnostic(finding, state.lines(number, ls.encoding), lambda related: (
                uris[related.cell], state.lines(related.cell, ls.encoding)) if related.cell in uris else None))
    previous = ls.notebooks.get(unquote(uri))
    for cell_uri in set(previous.uris.values() if previous else ()) - set(by_cell):
        by_cell[cell_uri] = []  # a cell deleted, or no longer Python: clear what it showed
    for cell_uri, diagnostics in by_cell.items():
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=diagnostics))


def _lsp():
    """server_lsp imports this module; its helpers are looked up when first needed."""
    from odelint.faces import server_lsp

    return server_lsp


async def code_actions(ls: OdelintServer, cell_uri: str, request: types.Range,
                       only: Sequence[str] | None) -> list[types.CodeAction] | None:
    """Quick fixes and "disable for this line" for the findings of one cell, and "fix all"
    for the whole notebook when the client asks for source actions."""
    lsp = _lsp()
    document = ls.workspace.get_notebook_document(cell_uri=cell_uri)
    state = await refresh(ls, document.uri) if document is not None else None
    number = state.number_of(cell_uri) if state is not None else None
    if state is None or number is None or state.linted.config_error is not None:
        return None

    def wanted(kind: str) -> bool:
        return only is None or any(kind == prefix or kind.startswith(f"{prefix}.") for prefix in only)

    linted, lines = state.linted, state.lines(number, ls.encoding)
    actions: list[types.CodeAction] = []
    for finding, shown in zip(linted.findings, state.placed, strict=False):
        if shown.cell != number or not wanted(types.CodeActionKind.QuickFix):
            continue
        diagnostic = lsp.diagnostic(shown, lines)
        if not lsp._touches(diagnostic.range, request):
            continue
        fix = finding.fix
        if fix is not None and lsp.offered(finding, linted.unsafe):
            unsafe = fix.safety is Safety.UNSAFE
            fixed = await ls.on_worker(lambda finding=finding: fix_source(
                linted.text, linted.path, linted.codes, unsafe=linted.unsafe, only=finding, versions=linted.versions,
                options=linted.options))
            actions.append(types.CodeAction(
                f"{finding.code}: {fix.description}{' (unsafe fix)' if unsafe else ''}",
                kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic], is_preferred=not unsafe or None,
                edit=_edit(ls, state, fixed.source)))
        if finding.code != SyntaxErrorRule.code:
            actions.append(types.CodeAction(
                f"Disable {finding.code} for this line", kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                edit=_edit(ls, state, noqa.add_noqa(linted.text, [finding]))))
    if only is not None and wanted(lsp.FIX_ALL) and any(lsp.offered(f, linted.unsafe) for f in linted.findings):
        fixed = await ls.on_worker(lambda: fix_source(linted.text, linted.path, linted.codes, unsafe=linted.unsafe,
                                                      versions=linted.versions, options=linted.options))
        actions.append(types.CodeAction("Fix all odelint findings", kind=lsp.FIX_ALL,
                                        edit=_edit(ls, state, fixed.source)))
    return [action for action in actions if action.edit is not None]


def _edit(ls: OdelintServer, state: LintedNotebook, program: str) -> types.WorkspaceEdit | None:
    """The program's change as one minimal text edit per changed cell (None when a change
    would touch IPython syntax, or nothing changed)."""
    try:
        changed = state.notebook.changed(program)
    except NotebookError as error:
        ls.log(f"odelint: {state.linted.path}: {error}")
        return None
    changes: dict[str, list[types.TextEdit]] = {}
    for number, (old, new) in changed.items():
        edit = minimal_edit(old, new, ls.encoding)
        if edit is not None:
            changes[state.uris[number]] = [types.TextEdit(
                range=types.Range(types.Position(edit.start.line, edit.start.character),
                                  types.Position(edit.end.line, edit.end.character)),
                new_text=edit.new_text)]
    return types.WorkspaceEdit(changes=changes) if changes else None


def close(ls: OdelintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.parsers.pop(uri, None)
    known = ls.notebooks.pop(unquote(uri), None)
    cells = set(known.uris.values() if known else ()) | {cell.uri for cell in params.cell_text_documents}
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
