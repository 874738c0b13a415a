"""The language server, driven as a real process over stdio with pytest-lsp."""

from __future__ import annotations

import asyncio
import sys

import pytest

pytest_lsp = pytest.importorskip("pytest_lsp")

from lsp_raw import RawClient  # noqa: E402
from lsprotocol import types  # noqa: E402
from odelint.api import docs  # noqa: E402
from odelint.api.registry import rule_for  # noqa: E402
from odelint.engine.core import fix_source, lint_source  # noqa: E402
from pygls.protocol import default_converter  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features  # noqa: E402

pytestmark = pytest.mark.asyncio

DEBOUNCE = 0.2
ADAM = ("import equinox as eqx\nimport jax\nimport optax\n\n"
        "model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))\n"
        "optim = optax.adam(1e-3)\nopt_state = optim.init(model)\n")            # ODL201, safe fix
ADAMW = ("import equinox as eqx\nimport optax\n\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
         "optim = optax.adamw(1e-3)\n\ndef step(grads, opt_state):\n"
         "    return optim.update(grads, opt_state)\n")                          # ODL203, unsafe fix
NON_ASCII = "import optax\n\noptim = optax.adamw(1e-3)\n" 'w = "αβγ😀"; u, s = optim.update({"w": 1.0}, None)\n'


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, also keeping every publishDiagnostics (with its version) and registration."""
    client = LanguageClient(converter_factory=default_converter)
    client.published = []
    client.registrations = []

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.published.append(params)

    def register(client: LanguageClient, params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    register_lsp_features(client, {**DEFAULT_CLIENT_FEATURES, types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: publish,
                                   types.CLIENT_REGISTER_CAPABILITY: register})
    return client


CONFIG = ClientServerConfig(server_command=[sys.executable, "-m", "odelint", "server", "--debounce", str(DEBOUNCE)],
                            client_factory=_recording_client)


async def _start(lsp_client: LanguageClient, root, capabilities: types.ClientCapabilities):
    lsp_client.initialize_result = await lsp_client.initialize_session(
        types.InitializeParams(capabilities=capabilities, root_uri=root.as_uri()))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient, tmp_path):
    async for _ in _start(lsp_client, tmp_path, types.ClientCapabilities()):
        yield


@pytest_lsp.fixture(config=CONFIG, params=["visual-studio-code", "neovim", "emacs"])
async def editor(lsp_client: LanguageClient, tmp_path, request):
    async for _ in _start(lsp_client, tmp_path, client_capabilities(request.param)):
        yield


# helpers ---------------------------------------------------------------------------------------

def open_file(client: LanguageClient, path, text: str, version: int = 1) -> str:
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [types.TextDocumentContentChangeWholeDocument(text=text)]))


async def published(client: LanguageClient, uri: str, version: int | None, after: int = 0,
                    timeout: float = 30.0) -> list[types.Diagnostic]:
    """The diagnostics published for `uri` at `version` (skipping the first `after` publishes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        for params in client.published[after:]:
            if params.uri == uri and params.version == version:
                return list(params.diagnostics)
        await asyncio.sleep(0.02)
    raise AssertionError(f"no diagnostics for {uri} version {version}: {client.published}")


async def actions_at(client: LanguageClient, uri: str, where: types.Range, only=None) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri), range=where,
        context=types.CodeActionContext(diagnostics=[], only=only)))
    return list(result or [])


def _offset(text: str, position: types.Position, units) -> int:
    lines = text.splitlines(keepends=True)
    start = sum(len(line) for line in lines[:position.line])
    line = lines[position.line] if position.line < len(lines) else ""
    for index in range(len(line) + 1):
        if units(line[:index]) >= position.character:
            return start + index
    return start + len(line)


def apply(text: str, edit: types.WorkspaceEdit, units=lambda s: len(s.encode("utf-16-le")) // 2) -> str:
    """What an editor does with the server's edit (one TextEdit per action)."""
    if edit.document_changes:
        [document_edit] = edit.document_changes
        [text_edit] = document_edit.edits
    else:
        [[text_edit]] = edit.changes.values()
    start, end = _offset(text, text_edit.range.start, units), _offset(text, text_edit.range.end, units)
    return text[:start] + text_edit.new_text + text[end:]


def engine_findings(text: str):
    return lint_source(text, "example.py").findings


# tests -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("old, new", [
    ("a = 1\r\nb = 2\r\n", "a = 1\r\nc = 3\r\nb = 2\r\n"),   # insertion right after a CRLF
    ("x = '😀'; y = f(m)\n", "x = '😀'; y = f(g(m))\n"),         # edit after an astral character
    ("a\rb\rc", "a\rB\rc"),                                        # old Mac line ends
    ("same\n", "same\n"),
])
async def test_minimal_edit_round_trips(old, new):
    from odelint.faces.server_text import Lines, minimal_edit

    edit = minimal_edit(old, new)
    if old == new:
        assert edit is None
        return
    as_lsp = types.WorkspaceEdit(changes={"u": [types.TextEdit(
        types.Range(types.Position(edit.start.line, edit.start.character),
                    types.Position(edit.end.line, edit.end.character)), edit.new_text)]})
    assert apply(old, as_lsp) == new
    assert len(edit.new_text) < len(new)
    assert Lines("é😀x\n").position(1, 3).character == 3  # 2 code points, 3 UTF-16 units


async def test_open_publishes_the_engine_findings(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    [shown] = await published(client, uri, 1)
    [finding] = engine_findings(ADAM)
    assert shown.code == finding.code == "ODL201"
    assert shown.message == finding.message
    assert shown.source == "odelint"
    assert shown.severity == types.DiagnosticSeverity.Warning
    assert shown.code_description.href == docs.url(rule_for("ODL201"))
    assert (shown.range.start.line, shown.range.start.character) == (finding.span.line - 1, finding.span.column - 1)
    assert (shown.range.end.line, shown.range.end.character) == (finding.span.end_line - 1, finding.span.end_column - 1)


async def test_non_ascii_line_gives_utf16_characters(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "m.py", NON_ASCII)
    [shown] = await published(client, uri, 1)
    assert engine_findings(NON_ASCII)[0].span.column == 20  # code points, 1-based
    # 19 code points before the call; the emoji is two UTF-16 code units.
    assert (shown.range.start.line, shown.range.start.character) == (3, 20)


async def test_negotiated_position_encoding_is_honoured(editor: LanguageClient, tmp_path):
    """Neovim asks for UTF-8 positions, Emacs (eglot) for UTF-32, VS Code gets UTF-16."""
    uri = open_file(editor, tmp_path / "m.py", NON_ASCII)
    [shown] = await published(editor, uri, 1)
    encoding = editor.initialize_result.capabilities.position_encoding or "utf-16"
    prefix = NON_ASCII.splitlines()[3][:19]
    expected = {"utf-8": len(prefix.encode()), "utf-16": 20, "utf-32": 19}[encoding]
    assert shown.range.start.character == expected
    # the server watches pyproject.toml and the dependency files where the client lets it
    # register a watcher
    dynamic = editor.capabilities.workspace.did_change_watched_files.dynamic_registration
    assert [r.method for r in editor.registrations] == ([types.WORKSPACE_DID_CHANGE_WATCHED_FILES] if dynamic else [])
    for registration in editor.registrations:
        globs = {watcher["globPattern"] for watcher in registration.register_options["watchers"]}
        assert {"**/pyproject.toml", "**/requirements*.txt", "**/environment*.yml"} <= globs


async def test_a_burst_of_edits_is_linted_once_at_the_last_version(client: LanguageClient, tmp_path):
    clean = ADAM.replace("optim.init(model)", "optim.init(eqx.filter(model, eqx.is_array))")
    uri = open_file(client, tmp_path / "train.py", clean)
    assert await published(client, uri, 1) == []
    before = len(client.published)
    for version in range(2, 32):
        change(client, uri, ADAM if version % 2 else clean, version)
    assert len(await published(client, uri, 31, after=before)) == 1
    await asyncio.sleep(2 * DEBOUNCE)
    assert [p.version for p in client.published[before:] if p.uri == uri] == [31]


async def test_save_lints_again(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    await published(client, uri, 1)
    before = len(client.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert [d.code for d in await published(client, uri, 1, after=before)] == ["ODL201"]


async def test_quick_fix_is_the_engine_fix_and_clears_the_diagnostic(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    [shown] = await published(client, uri, 1)
    actions = await actions_at(client, uri, shown.range)
    # answered from the server's own lint: shown once, though the forked first lint came first
    assert [params.version for params in client.published if params.uri == uri] == [1]
    fixes = [a for a in actions if a.title.startswith("ODL201:")]
    assert [a.kind for a in fixes] == [types.CodeActionKind.QuickFix]
    assert fixes[0].is_preferred and "unsafe" not in fixes[0].title
    assert fixes[0].diagnostics[0].code == "ODL201"
    fixed = apply(ADAM, fixes[0].edit)
    assert fixed == fix_source(ADAM, "example.py").source
    before = len(client.published)
    change(client, uri, fixed, 2)
    assert await published(client, uri, 2, after=before) == []


async def test_fix_all_and_source_kind_filter(client: LanguageClient, tmp_path):
    text = ADAM + "again = optax.rmsprop(0.1).init(model)\n"
    uri = open_file(client, tmp_path / "train.py", text)
    assert len(await published(client, uri, 1)) == 2
    everything = types.Range(types.Position(0, 0), types.Position(0, 0))
    [fix_all] = await actions_at(client, uri, everything, only=[types.CodeActionKind.SourceFixAll])
    assert (fix_all.kind, fix_all.title) == ("source.fixAll.odelint", "Fix all odelint findings")
    fixed = apply(text, fix_all.edit)
    assert fixed == fix_source(text, "example.py").source and engine_findings(fixed) == []
    assert await actions_at(client, uri, everything, only=[types.CodeActionKind.Refactor]) == []


async def test_disable_for_this_line_adds_noqa(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    [shown] = await published(client, uri, 1)
    [disable] = [a for a in await actions_at(client, uri, shown.range) if a.title == "Disable ODL201 for this line"]
    fixed = apply(ADAM, disable.edit)
    assert fixed.splitlines()[6] == "opt_state = optim.init(model)  # noqa: ODL201"
    change(client, uri, fixed, 2)
    assert await published(client, uri, 2) == []


async def test_unsafe_fixes_only_when_configured_and_labelled(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAMW)
    [shown] = await published(client, uri, 1)
    assert [a.title for a in await actions_at(client, uri, shown.range)] == ["Disable ODL203 for this line"]

    (tmp_path / "pyproject.toml").write_text("[tool.odelint]\nunsafe-fixes = true\n", encoding="utf-8")
    before = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=(tmp_path / "pyproject.toml").as_uri(), type=types.FileChangeType.Created)]))
    await published(client, uri, 1, after=before)
    actions = await actions_at(client, uri, shown.range)
    [unsafe] = [a for a in actions if a.title.startswith("ODL203:")]
    assert unsafe.title.endswith("(unsafe fix)") and not unsafe.is_preferred
    assert "eqx.filter(model, eqx.is_array)" in apply(ADAMW, unsafe.edit)
    # without resolve support, fixing everything is computed only when source actions are asked for
    assert not any(a.kind == "source.fixAll.odelint" for a in actions)
    [fix_all] = await actions_at(client, uri, shown.range, only=[types.CodeActionKind.Source])
    assert fix_all.kind == "source.fixAll.odelint"


async def test_pyproject_change_reloads_the_configuration(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    assert len(await published(client, uri, 1)) == 1
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.odelint]\nignore = ["ODL201"]\n', encoding="utf-8")
    before = len(client.published)
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(config.as_uri())))
    assert await published(client, uri, 1, after=before) == []

    config.write_text('[tool.odelint]\nignore = ["NOPE"]\n', encoding="utf-8")
    before = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]))
    [broken] = await published(client, uri, 1, after=before)
    assert broken.message.startswith("configuration error:") and "NOPE" in broken.message


async def test_the_projects_pinned_versions_decide_findings_and_fixes_as_for_odelint_check(
        client: LanguageClient, tmp_path):
    """The server once linted with no target versions: for a project pinned to jax 0.4.20 it
    said `jax.tree_map` was removed, which `odelint check` rightly does not, and its fix-all
    rewrote it to `jax.tree.map`, which jax 0.4.20 does not have."""
    from odelint.files.versions import target_versions

    (tmp_path / "requirements.txt").write_text("jax==0.4.20\n")
    text = ("import jax\nimport equinox as eqx\n\nleaves = jax.tree_map(abs, [1.0])\n"
            "norm = eqx.experimental.BatchNorm\n")
    uri = open_file(client, tmp_path / "train.py", text)
    shown = await published(client, uri, 1)
    pinned = target_versions(str(tmp_path))
    assert [d.code for d in shown] == [f.code for f in lint_source(text, "train.py", versions=pinned).findings] \
        == ["ODL911"]
    everything = types.Range(types.Position(0, 0), types.Position(0, 0))
    assert await actions_at(client, uri, everything, only=[types.CodeActionKind.SourceFixAll]) == []
    assert fix_source(text, "train.py").source != text, "with no versions, the fix would be offered"

    # the pin moves on: the versions are read again, as pyproject.toml's settings are
    (tmp_path / "requirements.txt").write_text("jax==0.4.30\n")
    before = len(client.published)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=(tmp_path / "requirements.txt").as_uri(), type=types.FileChangeType.Changed)]))
    shown = await published(client, uri, 1, after=before)
    assert [d.code for d in shown] == ["ODL901", "ODL911"] and "still works on jax 0.4.30" in shown[0].message


async def test_close_clears_diagnostics(client: LanguageClient, tmp_path):
    uri = open_file(client, tmp_path / "train.py", ADAM)
    await published(client, uri, 1)
    before = len(client.published)
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    assert await published(client, uri, None, after=before) == []


async def test_syntax_error_is_a_diagnostic_and_the_server_carries_on(client: LanguageClient, tmp_path):
    bad = open_file(client, tmp_path / "bad.py", "import optax\ndef step(model:\n    pass\n")
    [shown] = await published(client, bad, 1)
    assert shown.code == "ODL000" and shown.severity == types.DiagnosticSeverity.Error
    assert await actions_at(client, bad, shown.range) == []
    good = open_file(client, tmp_path / "train.py", ADAM)
    assert [d.code for d in await published(client, good, 1)] == ["ODL201"]


async def test_malformed_messages_get_errors_and_the_server_carries_on(tmp_path):
    """Raw JSON-RPC over the server's pipes: bad params, bad JSON, an unknown method."""
    client = await RawClient.start()
    send, wait_for = client.send, client.wait_for
    try:
        await client.initialize(tmp_path.as_uri())
        await send({"id": 2, "method": "textDocument/codeAction", "params": {"textDocument": 42}})
        assert (await wait_for(lambda m: m.get("id") == 2))["error"]["code"] == -32602
        await send(b"{this is not json")
        assert (await wait_for(lambda m: "error" in m and m.get("id") is None))["error"]["code"] == -32700
        await send({"id": 3, "method": "odelint/no-such-method", "params": {}})
        assert (await wait_for(lambda m: m.get("id") == 3))["error"]["code"] == -32601
        await send({"id": 4, "method": "codeAction/resolve", "params": {"title": "stale", "data": {"uri": "x"}}})
        assert (await wait_for(lambda m: m.get("id") == 4))["result"]["title"] == "stale"

        uri = (tmp_path / "train.py").as_uri()
        await send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": ADAM}}})
        shown = await wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert [d["code"] for d in shown["params"]["diagnostics"]] == ["ODL201"]
        await send({"id": 5, "method": "shutdown"})
        await wait_for(lambda m: m.get("id") == 5)
        await send({"method": "exit"})
        assert await asyncio.wait_for(client.process.wait(), 30) == 0
    finally:
        await client.close()


async def test_editor_with_resolve_support_gets_edits_lazily(editor: LanguageClient, tmp_path):
    uri = open_file(editor, tmp_path / "train.py", ADAM)
    [shown] = await published(editor, uri, 1)
    [fix] = [a for a in await actions_at(editor, uri, shown.range) if a.title.startswith("ODL201:")]
    if editor.capabilities.text_document.code_action.resolve_support is None:
        assert fix.edit is not None  # eglot: no resolve support, the edit comes at once
        return
    assert fix.edit is None
    resolved = await editor.code_action_resolve_async(fix)
    assert apply(ADAM, resolved.edit) == fix_source(ADAM, "example.py").source
    if editor.capabilities.workspace.workspace_edit.document_changes:
        assert resolved.edit.document_changes[0].text_document.version == 1
    # once the buffer has changed, an old action resolves to no edit
    change(editor, uri, ADAM + "\n", 2)
    await published(editor, uri, 2)
    assert (await editor.code_action_resolve_async(fix)).edit is None


async def _framed(client: RawClient, body: bytes, length: int) -> None:
    client.process.stdin.write(b"Content-Length: %d\r\n\r\n" % length + body)
    await client.process.stdin.drain()


@pytest.mark.parametrize("wrong", [-7, +40])
async def test_a_wrong_content_length_costs_only_that_message(tmp_path, wrong: int):
    """Too short leaves the body's tail in front of the next header; too long waits for bytes
    that never come. Either way the server keeps answering, and shutdown/exit still work."""
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        body = b'{"jsonrpc": "2.0", "id": 2, "method": "odelint/no-such-method", "params": {}}'
        await _framed(client, body, len(body) + wrong)
        if wrong > 0:  # the whole object arrived and nothing more: it is answered, not waited on
            assert (await client.wait_for(lambda m: m.get("id") == 2))["error"]["code"] == -32601
        await client.send({"id": 3, "method": "odelint/no-such-method", "params": {}})
        assert (await client.wait_for(lambda m: m.get("id") == 3))["error"]["code"] == -32601
        uri = (tmp_path / "train.py").as_uri()
        await client.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": ADAM}}})
        shown = await client.wait_for(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        assert [d["code"] for d in shown["params"]["diagnostics"]] == ["ODL201"]
        await client.send({"id": 5, "method": "shutdown"})
        await client.wait_for(lambda m: m.get("id") == 5)
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(client.process.wait(), 30) == 0
    finally:
        await client.close()


async def test_a_too_long_message_followed_by_another_is_split_at_the_next_header(tmp_path):
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        first = b'{"jsonrpc": "2.0", "id": 2, "method": "odelint/no-such-method", "params": {}}'
        second = b'{"jsonrpc": "2.0", "id": 3, "method": "odelint/no-such-method", "params": {}}'
        client.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(first) + 30, first)
                                   + b"Content-Length: %d\r\n\r\n%s" % (len(second), second))
        await client.process.stdin.drain()
        assert (await client.wait_for(lambda m: m.get("id") == 2))["error"]["code"] == -32601
        assert (await client.wait_for(lambda m: m.get("id") == 3))["error"]["code"] == -32601
    finally:
        await client.close()


async def test_requests_after_shutdown_are_invalid_and_exit_codes_follow_the_spec(tmp_path):
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        await client.send({"id": 2, "method": "shutdown"})
        await client.wait_for(lambda m: m.get("id") == 2)
        await client.send({"id": 3, "method": "textDocument/codeAction", "params": {
            "textDocument": {"uri": "file:///x.py"}, "range": {"start": {"line": 0, "character": 0},
                                                              "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}}})
        assert (await client.wait_for(lambda m: m.get("id") == 3))["error"]["code"] == -32600
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(client.process.wait(), 30) == 0
    finally:
        await client.close()
    client = await RawClient.start()
    try:
        await client.initialize(tmp_path.as_uri())
        await client.send({"method": "exit"})
        assert await asyncio.wait_for(client.process.wait(), 30) == 1
    finally:
        await client.close()


async def test_an_unsaved_buffer_of_another_file_answers_for_it(client: LanguageClient, tmp_path):
    """model.py's unsaved text decides what train.py imports from it: a class edited into an
    Equinox module in the editor makes train.py's `optim.init(net)` a finding before anything
    is saved, and train.py is linted again when model.py changes back."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    plain = "class Net:\n    def __init__(self):\n        self.act = print\n"
    module = ("import equinox as eqx\n\n\nclass Net(eqx.Module):\n    mlp: eqx.nn.MLP\n\n    def __init__(self):\n"
              "        self.mlp = eqx.nn.MLP(2, 2, 8, 1, key=None)\n")
    train = "import optax\n\nfrom model import Net\n\nnet = Net()\nopt_state = optax.adam(1e-3).init(net)\n"
    model_uri = open_file(client, tmp_path / "model.py", plain)       # saved: not a module
    assert await published(client, model_uri, 1) == []
    train_uri = open_file(client, tmp_path / "train.py", train)
    assert await published(client, train_uri, 1) == []
    before = len(client.published)
    change(client, model_uri, module, 2)                             # edited, not saved
    await published(client, model_uri, 2, after=before)
    [shown] = await published(client, train_uri, 1, after=before)   # linted again, same version
    assert shown.code == "ODL201" and "`net`" in shown.message
    assert (tmp_path / "model.py").read_text(encoding="utf-8") == plain
    before = len(client.published)
    change(client, model_uri, plain, 3)
    assert await published(client, train_uri, 1, after=before) == []


async def test_an_unsaved_conftest_decides_a_tests_float64_whichever_process_lints_it(client: LanguageClient,
                                                                                      tmp_path):
    """x64 switched on in an unsaved conftest.py counts for the tests beside it, and the test is
    linted again when the switch goes. ODL707 is among the rules a helper process lints where
    the server has one (odelint.faces.server_helper): the editor's buffers reach it too."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    x64 = "import jax\n\njax.config.update('jax_enable_x64', True)\n"
    test = "import jax.numpy as jnp\n\n\ndef test_zeros():\n    assert jnp.zeros(3, dtype=jnp.float64).shape == (3,)\n"
    conftest_uri = open_file(client, tmp_path / "tests" / "conftest.py", "")
    assert await published(client, conftest_uri, 1) == []
    change(client, conftest_uri, x64, 2)                             # edited, not saved
    await published(client, conftest_uri, 2)
    test_uri = open_file(client, tmp_path / "tests" / "test_zeros.py", test)
    assert await published(client, test_uri, 1) == []
    before = len(client.published)
    change(client, conftest_uri, "", 3)
    [shown] = await published(client, test_uri, 1, after=before)    # linted again, same version
    assert shown.code == "ODL707"
