"""Regression tests for issue 22's line-handling defects: lines end where Python ends them
(never at `\\v`, `\\f`, `\\x1c`, U+2028...), CR-only files, notebook imports that must land in
a cell that runs Python, `%%time` cells."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from odelint.engine import noqa
from odelint.engine.core import fix_source, lint_source
from odelint.faces import cli
from odelint.files import lines, notebook

REMOVED = "y = jax.tree_map(f, t)"  # ODL901, fixed to jax.tree.map


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---- item 1: only \n, \r\n and \r end a line

@pytest.mark.parametrize("odd", ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"])
def test_add_noqa_never_puts_the_comment_inside_a_string(odd: str) -> None:
    source = f'import jax\ns = "a{odd}b"; {REMOVED}\nz = 1\n'
    findings = lint_source(source, "m.py").findings
    assert [(f.code, f.span.line) for f in findings] == [("ODL901", 2)]
    added = noqa.add_noqa(source, findings)
    assert added == f'import jax\ns = "a{odd}b"; {REMOVED}  # noqa: ODL901\nz = 1\n'
    assert lint_source(added, "m.py").findings == []
    assert noqa.add_noqa(added, lint_source(added, "m.py").findings) == added


def test_split_follows_python() -> None:
    assert lines.split("a\r\nb\rc\nd\ve\x1cf") == ["a\r\n", "b\r", "c\n", "d\ve\x1cf"]
    assert lines.bare("a\r\nb\r\r") == ["a", "b", ""]
    assert lines.split("") == [] and lines.split("\n") == ["\n"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "\r", "\v", "\x85", "\u2028"]), max_size=12))
def test_split_and_bare_agree_with_the_definition_of_a_line(text: str) -> None:
    """Both take a quicker path for text without `\\r`; both must keep Python's lines."""
    defined = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    assert lines.split(text) == defined
    assert lines.bare(text) == [re.sub(r"(\r\n|\r|\n)$", "", line) for line in defined]
    assert "".join(lines.split(text)) == text


def test_snippet_shows_the_whole_line_with_an_odd_character(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(f'import jax\ns = "a\x1cb"; {REMOVED}\n'.encode())
    code, out, _ = run(capsys, "m.py")
    assert code == 1
    assert f' 2 | s = "a\x1cb"; {REMOVED}' in out.split("\n")


def test_disable_for_this_line_in_the_editor_lands_at_the_line_end() -> None:
    from odelint.faces.server_text import minimal_edit

    source = f'import jax\ns = "a\u2028b"; {REMOVED}\n'
    finding = lint_source(source, "m.py").findings[0]
    edit = minimal_edit(source, noqa.add_noqa(source, [finding]))
    assert edit is not None and edit.new_text == "  # noqa: ODL901"
    assert (edit.start.line, edit.start.character) == (1, len(f's = "a\u2028b"; {REMOVED}'))


# ---- item 14: CR-only line endings

CR_SOURCE = f"import jax\r{REMOVED}\rz = jax.tree_map(g, t)  # noqa\r"


def test_noqa_is_honoured_in_a_cr_only_file() -> None:
    assert [(f.code, f.span.line) for f in lint_source(CR_SOURCE, "m.py").findings] == [("ODL901", 2)]
    comments = noqa.Comments(CR_SOURCE)
    assert comments.by_line == {3: "# noqa"}


def test_add_noqa_is_idempotent_in_a_cr_only_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(CR_SOURCE.encode())
    run(capsys, "--add-noqa", "m.py")
    once = (tmp_path / "m.py").read_bytes()
    assert once == f"import jax\r{REMOVED}  # noqa: ODL901\rz = jax.tree_map(g, t)  # noqa\r".encode()
    run(capsys, "--add-noqa", "m.py")
    assert (tmp_path / "m.py").read_bytes() == once


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_fix_keeps_the_final_line_break(ending: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_bytes(f"import jax{ending}{REMOVED}{ending}".encode())
    code, _, _ = run(capsys, "--fix", "m.py")
    assert code == 0
    assert (tmp_path / "m.py").read_bytes() == f"import jax{ending}y = jax.tree.map(f, t){ending}".encode()
    assert fix_source(f"import jax\r{REMOVED}\r", "m.py").source.endswith("\r")


def _notebook(*cells: str) -> bytes:
    document = {"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                           "source": lines.split(text)} for text in cells],
                "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}
    return (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode()


def test_notebook_cells_with_bare_cr_are_reported_at_the_right_cell_and_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_bytes(_notebook("import jax\rx = 1\r", f"a = 1\rb = 2\r{REMOVED}\r"))
    code, out, _ = run(capsys, "--quiet", "nb.ipynb")
    assert code == 1
    assert out.startswith("nb.ipynb:cell 2:3:5: ODL901")


# ---- item 2: an import a notebook fix adds runs Python, in or before the cell that needs it

IMPORTS = "from equinox.nn import MLP\nfrom optax import adam as Adam\n"
USE = "def main(key):\n    model = MLP(2, 2, 8, 1, key=key)\n    return Adam(1e-3).init(model)\n"


@pytest.mark.parametrize("magic", ["%%bash\necho hi\n", "%%writefile out.txt\nhello\n", "%%capture\nprint(1)\n"])
def test_an_added_import_never_lands_in_a_cell_magic_or_an_earlier_cell(
        magic: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_bytes(_notebook(IMPORTS, magic, USE))
    code, _, _ = run(capsys, "--fix", "nb.ipynb")
    assert code == 0
    cells = ["".join(cell["source"]) for cell in json.loads((tmp_path / "nb.ipynb").read_bytes())["cells"]]
    assert cells[0] == IMPORTS and cells[1] == magic
    assert cells[2] == "import equinox as eqx\n" + USE.replace(
        "init(model)", "init(eqx.filter(model, eqx.is_array))")


def test_an_added_import_goes_after_the_time_line_of_a_time_cell() -> None:
    book = notebook.read(_notebook(IMPORTS, "%%time\n" + USE))
    fixed = fix_source(book.source, "nb.ipynb").source
    texts = book.cell_texts(fixed)
    assert texts[0] == IMPORTS
    assert texts[1].startswith("%%time\nimport equinox as eqx\ndef main(key):")


# ---- item 21: %%time / %%timeit bodies are Python

@pytest.mark.parametrize("magic", ["%%time", "%%timeit -n 1", "\n%%time"])
def test_time_cells_are_linted(magic: str) -> None:
    book = notebook.read(_notebook("import jax\n", f"{magic}\n{REMOVED}\n"))
    findings = lint_source(book.source, "nb.ipynb").findings
    assert [book.locate(f.span.line) for f in findings] == [(2, magic.count("\n") + 2)]
    foreign = notebook.read(_notebook("import jax\n", f"%%bash\n{REMOVED}\n"))
    assert lint_source(foreign.source, "nb.ipynb").findings == []


# ---- item 20: Ruff's habits on the command line

ADAM = ("import equinox as eqx\nimport jax\nimport optax\n\n"
        "model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))\n"
        "optim = optax.adam(1e-3)\nopt_state = optim.init(model)\n" + REMOVED + "\n")  # ODL201 and ODL901


@pytest.fixture
def adam(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(ADAM)
    return tmp_path


def _codes(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("train.py:")]


def test_repeated_selection_flags_accumulate(adam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _codes(run(capsys, "--select", "ODL201", "--select", "ODL901", "train.py")[1]) == ["ODL201", "ODL901"]
    assert _codes(run(capsys, "--ignore", "ODL201", "--ignore", "ODL901", "train.py")[1]) == []
    assert _codes(run(capsys, "--select", "ODL7", "--extend-select", "ODL201", "--extend-select", "ODL901",
                      "train.py")[1]) == ["ODL201", "ODL901"]


def test_stdin_filename_alone_reads_stdin(adam: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (adam / "other.py").write_text("import jax\nz = jax.tree_map(f, t)\n")
    monkeypatch.setattr("sys.stdin", _Stdin(b"import jax\n" + REMOVED.encode() + b"\n"))
    code, out, _ = run(capsys, "--stdin-filename", "piped.py")
    assert code == 1
    assert out.startswith("piped.py:2:5: ODL901") and "other.py" not in out


def test_fix_on_stdin_reports_what_remains_on_stderr(adam: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    source = "import jax\nimport optax\n" + REMOVED + "\noptim = optax.adamw(1e-3)\nu = optim.update(g, None)\n"
    monkeypatch.setattr("sys.stdin", _Stdin(source.encode()))
    code, out, err = run(capsys, "--fix", "-")
    assert out == source.replace("jax.tree_map", "jax.tree.map")  # stdout: the fixed code only
    assert code == 1
    assert "-:5:5: ODL203" in err and "Found 2 findings (1 fixed, 1 remaining)." in err


class _Stdin:
    def __init__(self, data: bytes) -> None:
        import io

        self.buffer = io.BytesIO(data)


def test_a_mistyped_command_is_an_error_with_a_suggestion(adam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["chek", "."])
    err = capsys.readouterr().err
    assert code == 2 and err == "odelint: error: unknown command 'chek'; did you mean `odelint check`?\n"
    (adam / "chek").mkdir()  # a folder of that name is a path, as before
    assert cli.main(["chek"]) == 0


def test_a_noqa_prefix_suppresses_under_check_as_under_flake8() -> None:
    source = ADAM.replace("init(model)", "init(model)  # noqa: ODL2").replace(REMOVED, REMOVED + "  # noqa:ODL9")
    assert lint_source(source, "train.py").findings == []
    assert [f.code for f in lint_source(source.replace("ODL2\n", "ODL3\n"), "train.py").findings] == ["ODL201"]


def test_add_noqa_says_how_many_comments_it_added(adam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--add-noqa", "train.py")
    assert code == 0
    assert out == "Added 2 noqa directives.\n"
    code, out, _ = run(capsys, "--add-noqa", "train.py")
    assert out == "Added 0 noqa directives.\n"


# ---- item 21: output habits, one severity, docs that render

def test_concise_format_is_one_line_per_finding(adam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--output-format", "--format"):
        code, out, _ = run(capsys, flag, "concise", "train.py")
        assert code == 1
        lines = out.splitlines()
        assert [line.split()[1] for line in lines[:2]] == ["ODL201", "ODL901"]
        assert lines[0].startswith("train.py:7:24: ODL201 [*] ") and lines[1].startswith("train.py:8:5: ODL901 [*] ")
        assert lines[2] == "Found 2 findings." and not any(" | " in line for line in lines)


def test_one_severity_in_sarif_github_and_the_server(adam: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from odelint.faces.server_lsp import diagnostic
    from odelint.faces.server_text import Lines

    (adam / "broken.py").write_text("def f(:\n")
    _, out, _ = run(capsys, "--format", "sarif", "train.py", "broken.py")
    [sarif] = json.loads(out)["runs"]
    levels = {result["ruleId"]: result["level"] for result in sarif["results"]}
    assert levels == {"ODL000": "error", "ODL201": "warning", "ODL901": "warning"}
    assert {rule["id"]: rule["defaultConfiguration"]["level"] for rule in sarif["tool"]["driver"]["rules"]} == levels
    _, out, _ = run(capsys, "--format", "github", "train.py", "broken.py")
    assert [line.split(" ", 1)[0] for line in out.splitlines()] == ["::error", "::warning", "::warning"]
    from lsprotocol import types

    findings = lint_source(ADAM, "train.py").findings + lint_source("def f(:\n", "broken.py").findings
    shown = {f.code: diagnostic(f, Lines(ADAM)).severity for f in findings}
    assert shown == {"ODL201": types.DiagnosticSeverity.Warning, "ODL901": types.DiagnosticSeverity.Warning,
                     "ODL000": types.DiagnosticSeverity.Error}


def test_no_rule_page_turns_into_a_code_block() -> None:
    """A docstring line indented less than the rest stops the dedent: Markdown then shows the
    whole page as code (ODL707 did)."""
    from odelint.api.registry import all_rules

    for rule in all_rules():
        headings = [line for line in rule.docs().split("\n") if line.lstrip().startswith("## ")]
        assert headings and all(line.startswith("## ") for line in headings), rule.code


def test_readme_fix_column_agrees_with_the_rules_listing() -> None:
    from odelint.api import docs
    from odelint.api.registry import rule_infos

    readme = (Path(__file__).parent.parent / "README.md").read_text()
    rows = {cells[1]: cells[3] for line in readme.splitlines()
            if len(cells := [cell.strip() for cell in line.split("|")]) > 4 and cells[1].startswith("ODL")}
    for rule in rule_infos():
        if rule.code in rows:
            assert rows[rule.code] == (rule.fix_safety.value if rule.fix_safety else "–"), rule.code
    assert docs.fix_label  # the listing's label is built from the same fix_safety


# ---- item 21: related locations ("the key was first used here")

REUSE = ("import jax\n\ndef draw(key):\n    a = jax.random.normal(key, (2,))\n"
         "    b = jax.random.uniform(key, (2,))\n    return a + b\n")


def test_key_reuse_carries_where_the_key_was_first_used() -> None:
    [finding] = lint_source(REUSE, "m.py").findings
    assert finding.code == "ODL704" and finding.span.line == 5
    [related] = finding.related
    assert (related.span.line, related.span.column) == (4, 9)
    assert related.message == "the key `key` was first used here, by `jax.random.normal`"
    from odelint.api.finding import Finding

    assert Finding.from_dict(finding.to_dict()).related == finding.related  # through caches and workers


def test_related_locations_in_text_json_and_sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(REUSE)
    _, out, _ = run(capsys, "m.py")
    assert "   = note: m.py:4:9: the key `key` was first used here, by `jax.random.normal`" in out.splitlines()
    _, out, _ = run(capsys, "--format", "json", "m.py")
    [shown] = json.loads(out)
    assert shown["related"] == [{"message": "the key `key` was first used here, by `jax.random.normal`",
                                 "cell": None, "line": 4, "column": 9, "end_line": 4, "end_column": 37}]
    _, out, _ = run(capsys, "--format", "sarif", "m.py")
    [result] = json.loads(out)["runs"][0]["results"]
    [location] = result["relatedLocations"]
    assert location["message"]["text"].startswith("the key `key` was first used here")
    assert location["physicalLocation"]["region"]["startLine"] == 4


def test_a_related_location_in_another_cell_names_that_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    cells = ("import jax\nkey = jax.random.key(0)\n", "a = jax.random.normal(key, (2,))\n",
             "b = jax.random.uniform(key, (2,))\n")
    (tmp_path / "nb.ipynb").write_bytes(_notebook(*cells))
    _, out, _ = run(capsys, "--format", "json", "nb.ipynb")
    [shown] = json.loads(out)
    assert (shown["cell"], shown["line"]) == (3, 1)
    assert [(related["cell"], related["line"]) for related in shown["related"]] == [(2, 1)]
    _, out, _ = run(capsys, "nb.ipynb")
    assert any(line.startswith("   = note: nb.ipynb:cell 2:1:5: the key `key` was first used here")
               for line in out.splitlines())


def test_the_server_sends_related_information() -> None:
    from odelint.faces.server_lsp import diagnostic
    from odelint.faces.server_text import Lines

    [finding] = lint_source(REUSE, "m.py").findings
    lines = Lines(REUSE)
    shown = diagnostic(finding, lines, lambda related: ("file:///m.py", lines))
    [info] = shown.related_information or []
    assert info.location.uri == "file:///m.py" and info.location.range.start.line == 3
    assert info.message.startswith("the key `key` was first used here")


# ---- item 21: ODL002, unused noqa (off by default, as Ruff's RUF100)

STALE = (f"import jax\n\n{REMOVED}  # noqa: ODL901\nz = 1  # noqa: ODL201, E501\nw = 2  # noqa: ODL201\n"
         "v = 3  # noqa\nu = 4  # noqa: ODL201 kept for the old optimiser\n")


def test_unused_noqa_is_off_by_default_and_found_when_selected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(STALE)
    code, out, _ = run(capsys, "m.py")
    assert code == 0 and "All checks passed!" in out
    code, out, _ = run(capsys, "--extend-select", "ODL002", "--output-format", "concise", "m.py")
    assert code == 1
    assert out.splitlines()[:3] == [
        "m.py:4:8: ODL002 [*] `# noqa` names ODL201, but no ODL201 finding is on this line",
        "m.py:5:8: ODL002 [*] `# noqa` names ODL201, but no ODL201 finding is on this line",
        "m.py:7:8: ODL002 `# noqa` names ODL201, but no ODL201 finding is on this line"]  # other words: no fix


def test_fix_removes_unused_noqa_codes_and_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.odelint]\nextend-select = ["ODL002"]\n')
    (tmp_path / "m.py").write_text(STALE)
    code, out, _ = run(capsys, "--fix", "m.py")
    assert (tmp_path / "m.py").read_text() == STALE.replace("# noqa: ODL201, E501", "# noqa: E501").replace(
        "w = 2  # noqa: ODL201\n", "w = 2\n")
    assert code == 1 and "Found 3 findings (2 fixed, 1 remaining)." in out
    once = (tmp_path / "m.py").read_text()
    run(capsys, "--fix", "m.py")
    assert (tmp_path / "m.py").read_text() == once


def test_only_selectors_that_name_odl002_turn_it_on() -> None:
    from odelint.files.selection import Layer, resolve

    codes = ["ODL000", "ODL002", "ODL201"]
    assert resolve(codes, []) == {"ODL000", "ODL201"}
    assert resolve(codes, [Layer(None, ("ODL002",), ())]) == set(codes)
    assert resolve(codes, [Layer(("ALL",), (), ())]) == set(codes)
    assert resolve(codes, [Layer(("ODL2",), (), ())]) == {"ODL201"}


# ---- item 21: --show-files and --show-settings

def test_show_files_lists_what_would_be_linted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(REMOVED + "\n")
    (tmp_path / "nb.ipynb").write_bytes(_notebook("x = 1\n"))
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_text("x = 1\n")
    code, out, _ = run(capsys, "--show-files")
    assert code == 0 and out == "nb.ipynb\npkg/train.py\n"


def test_show_settings_prints_the_resolved_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.odelint]\nignore = ["ODL2"]\nunsafe-fixes = true\n')
    (tmp_path / "train.py").write_text(REMOVED + "\n")
    code, out, _ = run(capsys, "--show-settings", "--extend-select", "ODL002")
    assert code == 0
    shown = dict(line.split(":", 1) for line in out.splitlines())
    assert shown["Resolved settings for"].strip() == "train.py"
    assert shown["Settings path"].strip() == str(tmp_path / "pyproject.toml")
    enabled = shown["enabled rules"].strip().split(", ")
    assert "ODL002" in enabled and "ODL901" in enabled and not any(code.startswith("ODL2") for code in enabled)
    assert shown["unsafe-fixes"].strip() == "true"


# ---- item 20: a configuration error is reported once, at its line in the file

@pytest.mark.parametrize(("table", "line", "reason"), [
    ('select = ["ODL201"]\nignroe = ["X"]\n', 6, "unknown key(s) in [tool.odelint]: ignroe"),
    ('select = ["ODL201"\n', 5, "invalid TOML"),
    ('select = ["ODL201"]\nignore = ["ODL777"]\n', 6, "unknown rule code or prefix 'ODL777'"),
])
def test_a_configuration_error_is_reported_once_at_its_line(
        table: str, line: int, reason: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.odelint]\n' + table)
    (tmp_path / "pkg").mkdir()
    for name in ("a.py", "pkg/b.py"):
        (tmp_path / name).write_text(REMOVED + "\n")
    for args in ((".",), ("a.py", "pkg/b.py")):
        code, out, err = run(capsys, *args)
        assert code == 2 and err == ""
        [shown] = [text for text in out.splitlines() if ": ODL001 " in text]
        assert shown.startswith(f"pyproject.toml:{line}:1: ODL001 {reason}")


# ---- issue 23 item 5: one notebook implementation for the command line and the server

def test_the_file_and_the_editor_share_one_program() -> None:
    cells = (IMPORTS, "%%bash\necho hi\n", "%%time\n" + USE)
    book = notebook.read(_notebook(*cells))
    program = notebook.Program.of(enumerate(cells))  # what the server builds from open cell documents
    assert isinstance(book, notebook.Program)
    assert (program.source, program.cells) == (book.source, book.cells)
    fixed = fix_source(program.source, "nb.ipynb").source
    assert program.changed(fixed) == book.changed(fixed) == {
        3: (cells[2], "%%time\nimport equinox as eqx\n" + USE.replace("init(model)",
                                                                       "init(eqx.filter(model, eqx.is_array))"))}
