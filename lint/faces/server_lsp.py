"""The language server behind `odelint server`: pygls over stdio, one engine call per buffer.

Edits are debounced. Lints run on one worker thread, so the event loop keeps reading
messages; a newer edit cancels the lint still queued for an older one, and a result for a
version that is no longer current is dropped. Where the server has a helper process
(odelint.faces.server_helper), the first document opened is shown first as the helper linted
it, and every lint after is split between the two. Code actions recompute fixes with the
engine from the buffer the diagnostics came from, never from the editor's copy of them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import fnmatch
import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast
from urllib.parse import unquote

from lsprotocol import types
from odelint import __version__
from odelint.api import docs
from odelint.api.engine_rules import SyntaxErrorRule
from odelint.api.finding import ERROR, Finding, Related, Safety, Span
from odelint.api.registry import file_patterns, rules_by_code
from odelint.engine import noqa
from odelint.engine.collector import IdleCollector
from odelint.engine.core import fix_source
from odelint.engine.incremental import IncrementalParser
from odelint.engine.preload import load_linting
from odelint.faces import server_helper, server_notebook
from odelint.faces.server_lint import Linted, Split, lint_buffer, resolver, share_buffers
from odelint.faces.server_text import Lines, minimal_edit
from odelint.files import versions
from odelint.files.config import ConfigResolver
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument

if TYPE_CHECKING:
    from odelint.faces.server_helper import Helper

FIX_ALL = "source.fixAll.odelint"
CONFIG_NAME = "pyproject.toml"
# What the settings or the target versions are read from: a change lints every buffer again.
SETTINGS_FILES = tuple(dict.fromkeys((CONFIG_NAME, *versions.PIN_FILES)))
_FIX_ONE, _FIX_EVERY = "fix", "fix-all"


_ANSWERED = object()


class _Protocol(LanguageServerProtocol):
    """pygls logs a request it cannot read and answers nothing; JSON-RPC wants an error response."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" not in data or "method" not in data:
                raise
            self._send_response(data["id"], error=error.to_response_error())
            return _ANSWERED

    def handle_message(self, message) -> None:
        if message is _ANSWERED:
            return
        method = getattr(message, "method", None)
        if self._shutdown and method not in (None, types.EXIT) and getattr(message, "id", None) is not None:
            # pygls drops it; the spec wants InvalidRequest for every request after `shutdown`
            self._send_response(message.id, error=JsonRpcInvalidRequest(
                f"the server has shut down; {method} is not served (send `exit`)").to_response_error())
            return
        super().handle_message(message)


class OdelintServer(LanguageServer):
    def __init__(self, debounce: float, helper: Helper | None = None) -> None:
        super().__init__("odelint", __version__, protocol_cls=_Protocol, notebook_document_sync=server_notebook.SYNC)
        self.debounce = debounce
        self.helper = helper  # a process forked at start that lints beside this one
        self.resolver: ConfigResolver | None = None
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.parsers: dict[str, IncrementalParser] = {}  # each open document's last tree
        self.notebooks: dict[str, server_notebook.LintedNotebook] = {}  # each open notebook's last lint
        self.worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="odelint-lint")
        self.collector: IdleCollector | None = None  # garbage is collected when idle (odelint.engine.collector)

    # documents -----------------------------------------------------------------------------

    def document(self, uri: str) -> TextDocument | None:
        """The open buffer for `uri` (pygls would otherwise read a closed file from disk)."""
        return self.workspace.text_documents.get(unquote(uri))

    def path_of(self, document: TextDocument) -> str | None:
        """The path to lint the buffer as, or None when no rule looks at this kind of file."""
        path = document.path if document.uri.startswith("file:") else None
        name = os.path.basename(path or document.uri.rsplit("/", 1)[-1])
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in file_patterns()):
            return path or os.path.join(self.root(), name)
        if document.language_id == "python":
            return path or os.path.join(self.root(), "untitled.py")
        return None

    def root(self) -> str:
        return self.workspace.root_path or os.getcwd()

    @property
    def encoding(self) -> str:
        return str(self.server_capabilities.position_encoding or types.PositionEncodingKind.Utf16)

    # linting ---------------------------------------------------------------------------------

    def lint(self, uri: str, version: int | None, text: str, path: str) -> Linted:
        """Runs on the worker thread."""
        if self.resolver is None:
            self.resolver = resolver(self.root())
        files = open_files(self)
        share_buffers(files)
        parser = self.parsers.setdefault(uri, IncrementalParser())
        helper = self.helper
        split = Split(helper, files, list(self.parsers)) if helper is not None and helper.alive else None
        return lint_buffer(Linted(uri, version, text, path), self.resolver, parser, split)

    def relint_dependents(self, linted: Linted) -> None:
        """Other open buffers whose last lint read this one's file are linted again."""
        changed = os.path.abspath(linted.path)
        for uri, other in list(self.linted.items()):
            if uri != linted.uri and changed in other.depends:
                self.linted.pop(uri, None)
                self.schedule(uri, self.debounce)

    async def on_worker(self, function: Callable, *args):
        """Run engine work off the event loop; cancelling the caller drops it if it has not started."""
        return await asyncio.wrap_future(self.worker.submit(function, *args))

    def schedule(self, uri: str, delay: float) -> None:
        previous = self.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(self._lint_later(uri, delay))

    async def _lint_later(self, uri: str, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            await self.current(uri)
            parser = self.parsers.get(uri)
            if parser is not None and not parser.prepared:
                self.worker.submit(parser.prepare)  # after the first diagnostics, before the first edit
            if self.collector is None:
                self.collector = IdleCollector(asyncio.get_running_loop())
            self.collector.linted()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # one bad buffer must not stop the server
            self.log(f"odelint: internal error while linting {uri}: {type(error).__name__}: {error}")
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    async def current(self, uri: str) -> Linted | None:
        """The lint of the buffer as it is now (linting and publishing it if needed). A notebook is
        linted and published cell by cell; a cell is never linted alone, but with its notebook."""
        if server_notebook.is_notebook(self, uri):
            await server_notebook.refresh(self, uri)
            return None
        if server_notebook.is_cell(self, uri):
            return None
        document = self.document(uri)
        path = self.path_of(document) if document is not None else None
        if document is None or path is None:
            return None
        linted = self.linted.get(uri)
        if linted is not None and linted.version == document.version and linted.text is document.source:
            return linted
        linted, early = await self.lint_showing_early(uri, document.version, document.source, path, lambda: (
            (now := self.document(uri)) is not None and now.version == document.version
            and now.source is document.source), self.publish)
        now = self.document(uri)
        if now is None or now.version != linted.version:
            return None  # a newer edit arrived while this one was linted
        previous = self.linted.get(uri)
        self.linted[uri] = linted
        if not linted.already_shown(early, previous):
            self.publish(linted)
        if previous is not None and previous.text != linted.text:
            self.relint_dependents(linted)
        return linted

    async def lint_showing_early(self, uri: str, version: int | None, text: str, path: str,
                                 unchanged: Callable[[], bool], show: Callable[[Linted], None]
                                 ) -> tuple[Linted, Linted | None]:
        """This process's lint of a document, and the helper's lint of the first document where
        that came first and the document was `unchanged()` then (it is shown meanwhile), else None."""
        first = self._ask_first(uri, version, text, path)  # asked before the lint's own share: answered first
        if first is not None:
            # The helper lints fastest with the machine to itself (its first lint took 280-396 ms
            # after `didOpen` so, 371-463 ms beside this process's own lint): this one starts once
            # that answer is in, or once the helper has had the time it is given for a share.
            await asyncio.wait({first}, timeout=server_helper.PATIENCE[0])
        own = asyncio.ensure_future(self.on_worker(self.lint, uri, version, text, path))
        try:
            early = await self._early(uri, version, text, path, first, own, unchanged)
            if early is not None:
                show(early)
            return await own, early
        except asyncio.CancelledError:
            own.cancel()
            raise

    def _ask_first(self, uri: str, version: int | None, text: str, path: str) -> asyncio.Future | None:
        """Ask the helper to lint the first document opened (odelint.faces.server_helper), while
        this process has not loaded the engine; None where it is not asked."""
        helper = self.helper
        if helper is None or not helper.claim_first():
            return None
        return asyncio.wrap_future(helper.ask({"kind": server_helper.FIRST, "root": self.root(), "uri": uri,
                                               "text": text, "path": path}, open_files(self), block=False))

    async def _early(self, uri: str, version: int | None, text: str, path: str, answer: asyncio.Future | None,
                     own: asyncio.Future, unchanged: Callable[[], bool]) -> Linted | None:
        """The helper's lint of the first document (`answer`) when it comes before this process's
        own lint (`own`) and the document is `unchanged()` then; None where there was none."""
        if answer is None:
            return None
        await asyncio.wait({answer, own}, return_when=asyncio.FIRST_COMPLETED)
        given = answer.result() if answer.done() and not own.done() else None
        if given is None or not unchanged():
            return None
        return Linted(uri, version, text, path, findings=[Finding.from_dict(finding) for finding in given["findings"]],
                      crashes=given["crashes"], config_error=given["config_error"])

    def load(self) -> None:
        """Runs on the worker thread, once the editor has started the server."""
        load_linting(every_analysis=False)
        if self.helper is not None:
            self.helper.no_first()  # from now on the helper's first lint would save nothing

    def publish(self, linted: Linted) -> None:
        for message in linted.crashes:
            self.log(f"odelint: {linted.path}: {message}")
        if linted.config_error is not None:
            origin = types.Range(types.Position(0, 0), types.Position(0, 0))
            diagnostics = [types.Diagnostic(origin, f"configuration error: {linted.config_error}",
                                            severity=types.DiagnosticSeverity.Error, source="odelint")]
        else:
            lines = Lines(linted.text, self.encoding)
            diagnostics = [diagnostic(finding, lines, lambda related: (linted.uri, lines))
                           for finding in linted.findings]
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=linted.uri, diagnostics=diagnostics, version=linted.version))

    def forget(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.linted.pop(uri, None)
        self.parsers.pop(uri, None)
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def reload_config(self) -> None:
        """pyproject.toml or a dependency file changed: read the settings and the target
        versions again and lint every open buffer with them."""
        self.resolver = None
        versions.forget()
        self.linted.clear()
        for state in self.notebooks.values():
            state.version = -1  # stale: linted again, and cells that lost a finding are still cleared
        for uri in [*self.workspace.text_documents, *self.workspace.notebook_documents]:
            self.schedule(uri, 0)

    def report_server_error(self, error: Exception, source) -> None:
        """A message that is not JSON gets JSON-RPC's parse error (with no id to answer to)."""
        if isinstance(error, json.JSONDecodeError):
            no_id = cast("str | int", None)  # JSON-RPC answers a message it cannot read with id null
            self.protocol._send_response(no_id, error=JsonRpcParseError(str(error)).to_response_error())
            return
        super().report_server_error(error, source)

    def log(self, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))

    # code actions ----------------------------------------------------------------------------

    def resolves_edits(self) -> bool:
        """Whether the client asks for an action's edit only when the user picks it."""
        capability = self.client_capabilities.text_document
        action = capability.code_action if capability is not None else None
        support = action.resolve_support if action is not None else None
        return support is not None and "edit" in support.properties

    async def code_actions(self, linted: Linted, request: types.Range,
                           only: Sequence[str] | None) -> list[types.CodeAction]:
        def wanted(kind: str) -> bool:
            return only is None or any(kind == prefix or kind.startswith(f"{prefix}.") for prefix in only)

        lines = Lines(linted.text, self.encoding)
        actions: list[types.CodeAction] = []
        if wanted(types.CodeActionKind.QuickFix):
            for index, finding in enumerate(linted.findings):
                shown = diagnostic(finding, lines)
                if not _touches(shown.range, request):
                    continue
                if offered(finding, linted.unsafe):
                    unsafe = finding.fix.safety is Safety.UNSAFE  # type: ignore[union-attr]
                    label = " (unsafe fix)" if unsafe else ""
                    title = f"{finding.code}: {finding.fix.description}{label}"  # type: ignore[union-attr]
                    actions.append(await self._fix_action(linted, title, types.CodeActionKind.QuickFix, index,
                                                          [shown], preferred=not unsafe))
                if finding.code != SyntaxErrorRule.code:
                    actions.append(types.CodeAction(
                        f"Disable {finding.code} for this line", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[shown], edit=self.workspace_edit(linted, noqa.add_noqa(linted.text, [finding]))))
        # Fixing everything re-lints the buffer several times: a client that cannot resolve edits
        # lazily gets it only when it asks for source actions (fix-on-save, a "source action" menu).
        eager_ok = self.resolves_edits() or only is not None
        if wanted(FIX_ALL) and eager_ok and any(offered(finding, linted.unsafe) for finding in linted.findings):
            actions.append(await self._fix_action(linted, "Fix all odelint findings", FIX_ALL, None, None,
                                                  preferred=False))
        return actions

    async def _fix_action(self, linted: Linted, title: str, kind: str, index: int | None,
                          shown: list[types.Diagnostic] | None, preferred: bool) -> types.CodeAction:
        data = {"uri": linted.uri, "version": linted.version, "fix": _FIX_ONE if index is not None else _FIX_EVERY,
                "index": index}
        action = types.CodeAction(title, kind=kind, diagnostics=shown, is_preferred=preferred or None, data=data)
        if not self.resolves_edits():
            action.edit = await self.fix_edit(linted, index)
        return action

    async def fix_edit(self, linted: Linted, index: int | None) -> types.WorkspaceEdit | None:
        """The edit of one finding's fix (or of every fix): engine output turned into one TextEdit."""
        only = linted.findings[index] if index is not None else None
        fixed = await self.on_worker(
            lambda: fix_source(linted.text, linted.path, linted.codes, unsafe=linted.unsafe, only=only,
                               versions=linted.versions, options=linted.options))
        for crash in fixed.crashes:
            self.log(f"odelint: {linted.path}: {crash.message()}")
        return self.workspace_edit(linted, fixed.source)

    def workspace_edit(self, linted: Linted, new_text: str) -> types.WorkspaceEdit | None:
        edit = minimal_edit(linted.text, new_text, self.encoding)
        if edit is None:
            return None
        text_edit = types.TextEdit(
            range=types.Range(types.Position(edit.start.line, edit.start.character),
                              types.Position(edit.end.line, edit.end.character)),
            new_text=edit.new_text)
        capability = self.client_capabilities.workspace
        versioned = capability is not None and capability.workspace_edit is not None \
            and bool(capability.workspace_edit.document_changes)
        if versioned:
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=linted.uri, version=linted.version),
                edits=[text_edit])])
        return types.WorkspaceEdit(changes={linted.uri: [text_edit]})

    async def resolve(self, action: types.CodeAction) -> types.CodeAction:
        data = action.data if isinstance(action.data, dict) else {}
        linted = self.linted.get(str(data.get("uri")))
        index = data.get("index")
        if linted is None or linted.version != data.get("version") or data.get("fix") not in (_FIX_ONE, _FIX_EVERY):
            return action  # the buffer changed since the action was offered: no edit
        if data["fix"] == _FIX_ONE and not (isinstance(index, int) and 0 <= index < len(linted.findings)):
            return action
        action.edit = await self.fix_edit(linted, index if data["fix"] == _FIX_ONE else None)
        return action


def offered(finding: Finding, unsafe: bool) -> bool:
    return finding.fix is not None and (unsafe or finding.fix.safety is Safety.SAFE)


def lsp_range(span: Span, lines: Lines) -> types.Range:
    start = lines.position(span.line, span.column)
    end = lines.position(span.end_line, span.end_column)
    return types.Range(types.Position(start.line, start.character), types.Position(end.line, end.character))


def diagnostic(finding: Finding, lines: Lines,
               where: Callable[[Related], tuple[str, Lines] | None] | None = None) -> types.Diagnostic:
    """The finding as LSP shows it; `where` gives the document (URI and lines) a related
    location lies in, for `relatedInformation` ("the key was first used here")."""
    rule = rules_by_code().get(finding.code)
    related = []
    for other in finding.related:
        document = where(other) if where is not None else None
        if document is not None:
            related.append(types.DiagnosticRelatedInformation(
                types.Location(document[0], lsp_range(other.span, document[1])), other.message))
    return types.Diagnostic(
        range=lsp_range(finding.span, lines),
        related_information=related or None,
        message=finding.message,
        severity=types.DiagnosticSeverity.Error if finding.severity == ERROR else types.DiagnosticSeverity.Warning,
        code=finding.code,
        code_description=types.CodeDescription(href=link) if rule is not None and (link := docs.url(rule)) else None,
        source="odelint",
        data={"fix": finding.fix_safety},
    )


def open_files(server: LanguageServer) -> dict[str, str]:
    """The Python files open in the editor, by path, with their unsaved text."""
    return {os.path.abspath(document.path): document.source
            for document in list(server.workspace.text_documents.values())
            if document.uri.startswith("file:") and document.path.endswith(".py")}


def _touches(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges share a position (a cursor at either end of a finding counts)."""
    def key(position: types.Position) -> tuple[int, int]:
        return position.line, position.character
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _settings_file(uri: str) -> bool:
    name = unquote(uri).rpartition("/")[2]
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in SETTINGS_FILES)


def build(debounce: float, helper: Helper | None = None) -> OdelintServer:
    server = OdelintServer(debounce, helper)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: OdelintServer, params: types.InitializedParams) -> None:
        ls.worker.submit(ls.load)  # before the first document arrives, on the lint thread
        capability = ls.client_capabilities.workspace
        watch = capability.did_change_watched_files if capability is not None else None
        if watch is None or not watch.dynamic_registration:
            return
        options = types.DidChangeWatchedFilesRegistrationOptions(
            watchers=[types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in SETTINGS_FILES])
        try:
            await ls.client_register_capability_async(types.RegistrationParams(registrations=[types.Registration(
                id="odelint-config", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))
        except Exception as error:  # saving pyproject.toml in the editor still reloads it
            ls.log(f"odelint: cannot watch {', '.join(SETTINGS_FILES)}: {error}")

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OdelintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: OdelintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: OdelintServer, params: types.DidSaveTextDocumentParams) -> None:
        if _settings_file(params.text_document.uri):
            ls.reload_config()
        else:
            ls.linted.pop(params.text_document.uri, None)  # publish again even if nothing changed
            ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OdelintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: OdelintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(_settings_file(change.uri) for change in params.changes):
            ls.reload_config()

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=True))
    async def code_action(ls: OdelintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        if server_notebook.is_cell(ls, params.text_document.uri):
            return await server_notebook.code_actions(
                ls, params.text_document.uri, params.range,
                list(params.context.only) if params.context.only is not None else None)
        linted = await ls.current(params.text_document.uri)
        if linted is None or linted.config_error is not None:
            return None
        only = list(params.context.only) if params.context.only is not None else None
        return await ls.code_actions(linted, params.range, only)

    @server.feature(types.CODE_ACTION_RESOLVE)
    async def code_action_resolve(ls: OdelintServer, params: types.CodeAction) -> types.CodeAction:
        return await ls.resolve(params)

    server_notebook.register(server)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: OdelintServer, params: None) -> None:
        for task in ls.pending.values():
            task.cancel()
        if ls.helper is not None:
            ls.helper.close()
        ls.worker.shutdown(wait=False, cancel_futures=True)

    return server
