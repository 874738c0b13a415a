"""Jupyter notebooks as input: cells joined, magics masked, findings per cell, fixes written back
into the changed cell only, every other byte of the notebook kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from odelint.faces import cli
from odelint.files import cache, kinds, notebook

NOTEBOOK = Path(__file__).parent / "notebooks" / "train.ipynb"
HAZARD_LINE = "opt_state = optim.init(model)"
FIXED_LINE = "opt_state = optim.init(eqx.filter(model, eqx.is_array))"
MESSAGE = "ODL201 [*] `optim.init` gets the unfiltered Equinox module `model`"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(NOTEBOOK, tmp_path / "train.ipynb")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = cli.main(["check", "--no-cache", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def code_cell(data: bytes, number: int) -> dict:
    return json.loads(data)["cells"][number - 1]


# ---- reading: cells joined, IPython syntax masked, lines mapped back

def test_code_cells_are_joined_with_magics_masked_and_lines_mapped_back() -> None:
    book = notebook.read(NOTEBOOK.read_bytes())
    assert [cell.number for cell in book.cells] == [2, 3, 5, 6]  # markdown cells 1 and 4 are not code
    program = book.source.splitlines()
    assert program[0].startswith("pass  # odelint: IPython magic")      # %matplotlib inline
    assert program[1].startswith("pass  # odelint: IPython magic")      # !pip list
    assert program[2] == "import equinox as eqx"
    assert program.index(HAZARD_LINE) + 1 == 8
    assert book.locate(8) == (3, 3)
    assert program[9:12] == [notebook.MASK] * 3                          # the whole %%time cell
    assert program[12] == "files = ...  # odelint: IPython magic"        # files = !ls keeps its name
    assert program[13].startswith("pass  ")                              # jax.numpy.sum?
    assert program[14] == "len(files)"
    compile(book.source, "train.ipynb", "exec")


@pytest.mark.parametrize(("source", "masked"), [
    ("%time f()\nx = 1\n", {0}),
    ("if True:\n    %timeit f()\n", {1}),
    ("!pip install \\\n    optax\nimport optax\n", {0, 1}),
    ("a, b = %who_ls\n", {0}),
    ("x = 5 % 2\ny = x != 1\n", set()),
    ("x = (5\n     % 2)\ny = 5 \\\n    % 2\n", set()),
    ('doc = """\n%s is not a magic here\n"""\n%env A=1\n', {3}),
    ("\n%%bash\necho hi\n", {0, 1, 2}),
])
def test_masking_keeps_line_numbers_and_python(source: str, masked: set[int]) -> None:
    document = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": source}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    book = notebook.read(json.dumps(document).encode())
    assert set(book.cells[0].masked) == masked
    assert len(book.source.splitlines()) == len(source.splitlines())
    compile(book.source, "nb", "exec")


def test_a_change_that_touches_a_masked_line_is_refused() -> None:
    book = notebook.read(NOTEBOOK.read_bytes())
    with pytest.raises(notebook.NotebookError, match="IPython"):
        book.rewrite(book.source.replace("pass  # odelint: IPython magic", "pass", 1))


def test_lines_added_at_a_cell_boundary_go_to_the_earlier_cell() -> None:
    book = notebook.read(NOTEBOOK.read_bytes())
    program = book.source.replace("import optax\n", "import optax\nimport diffrax\n")
    texts = book.cell_texts(program)
    assert texts[1].endswith("import optax\nimport diffrax")  # no newline at the end, as before
    assert texts[2] == book.cells[1].text


# ---- the command line

def test_check_reports_the_cell_and_the_line_within_it(project: Path, capsys) -> None:
    code, out, _ = run(capsys, "train.ipynb")
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"train.ipynb:cell 3:3:24: {MESSAGE}")
    assert lines[1] == f" 3 | {HAZARD_LINE}"
    assert lines[2] == "   |                        ^^^^^"
    assert "Found 1 finding." in out


def test_fix_changes_only_that_cell_and_keeps_every_other_byte(project: Path, capsys) -> None:
    before = (project / "train.ipynb").read_bytes()
    code, out, _ = run(capsys, "--fix", "train.ipynb")
    assert code == 0 and "Found 1 finding (1 fixed, 0 remaining)." in out
    after = (project / "train.ipynb").read_bytes()
    # The file differs from the original by exactly the source line of cell 3 that was fixed.
    assert after == before.replace(json.dumps(HAZARD_LINE + "\n").encode(), json.dumps(FIXED_LINE + "\n").encode())
    assert code_cell(after, 3)["source"][2] == FIXED_LINE + "\n"
    assert code_cell(after, 3)["outputs"] == code_cell(before, 3)["outputs"]

    code, out, _ = run(capsys, "--fix", "train.ipynb")
    assert code == 0 and (project / "train.ipynb").read_bytes() == after


def test_diff_shows_the_cell_and_changes_nothing(project: Path, capsys) -> None:
    before = (project / "train.ipynb").read_bytes()
    code, out, err = run(capsys, "--diff", "train.ipynb")
    assert code == 1
    assert out.splitlines()[:2] == ["--- a/train.ipynb:cell 3", "+++ b/train.ipynb:cell 3"]
    assert f"-{HAZARD_LINE}" in out.splitlines() and f"+{FIXED_LINE}" in out.splitlines()
    assert "Would fix 1 finding(s) in 1 file(s)." in err
    assert (project / "train.ipynb").read_bytes() == before


def test_a_cell_held_as_one_string_stays_one_string(tmp_path: Path, monkeypatch, capsys) -> None:
    document = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    document["cells"][2]["source"] = "".join(document["cells"][2]["source"])
    (tmp_path / "nb.ipynb").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    fixed = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))
    assert fixed["cells"][2]["source"] == document["cells"][2]["source"].replace(HAZARD_LINE, FIXED_LINE)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8").startswith('{\n  "cells"')  # indent 2 kept
    assert "\\u03b7" in (tmp_path / "nb.ipynb").read_text(encoding="utf-8")  # ensure_ascii kept


def test_a_byte_order_mark_is_kept(tmp_path: Path, monkeypatch, capsys) -> None:
    (tmp_path / "nb.ipynb").write_bytes(b"\xef\xbb\xbf" + NOTEBOOK.read_bytes())
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "--fix", "nb.ipynb")[0] == 0
    fixed = (tmp_path / "nb.ipynb").read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf{") and FIXED_LINE.encode() in fixed


def test_a_layout_jupyter_never_writes_is_not_reformatted(tmp_path: Path, monkeypatch, capsys) -> None:
    document = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    text = json.dumps(document, indent=1, ensure_ascii=False).replace('"cells": [', '"cells" :  [')
    (tmp_path / "nb.ipynb").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, _, err = run(capsys, "--fix", "nb.ipynb")
    assert code == 2 and "cannot be rewritten without reformatting" in err
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == text


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats_carry_the_cell(project: Path, capsys, fmt: str) -> None:
    code, out, _ = run(capsys, "--format", fmt, "train.ipynb")
    assert code == 1
    if fmt == "json":
        [finding] = json.loads(out)
        assert (finding["path"], finding["cell"], finding["line"], finding["column"]) == ("train.ipynb", 3, 3, 24)
    elif fmt == "sarif":
        [result] = json.loads(out)["runs"][0]["results"]
        [location] = result["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "train.ipynb"
        assert location["physicalLocation"]["region"]["startLine"] == 3
        assert location["logicalLocations"][0]["name"] == "cell 3"
        assert result["properties"] == {"cell": 3}
    else:
        assert out.startswith("::error title=odelint (ODL201),file=train.ipynb,line=3,col=24,")
        assert "::cell 3: ODL201 " in out


def test_json_of_a_python_file_has_no_cell(project: Path, capsys) -> None:
    (project / "train.py").write_text("import equinox as eqx\nimport optax\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
                                      "opt_state = optax.adam(1e-3).init(model)\n")
    [finding] = json.loads(run(capsys, "--format", "json", "train.py")[1])
    assert finding["cell"] is None and finding["line"] == 4


def test_noqa_in_a_cell_silences_that_line(project: Path, capsys) -> None:
    path = project / "train.ipynb"
    path.write_text(path.read_text(encoding="utf-8").replace(
        json.dumps(HAZARD_LINE + "\n"), json.dumps(HAZARD_LINE + "  # noqa: ODL201\n")), encoding="utf-8")
    assert run(capsys, "train.ipynb")[:2] == (0, "All checks passed!\n")


def test_add_noqa_writes_into_the_cell(project: Path, capsys) -> None:
    run(capsys, "--add-noqa", "train.ipynb")
    cell = code_cell((project / "train.ipynb").read_bytes(), 3)
    assert cell["source"][2] == HAZARD_LINE + "  # noqa: ODL201\n"
    assert run(capsys, "train.ipynb")[0] == 0


def test_syntax_error_in_a_cell_is_reported_with_the_cell(project: Path, capsys) -> None:
    path = project / "train.ipynb"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["cells"][5]["source"] = ["files = !ls\n", "def broken(:\n", "    pass"]
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    code, out, _ = run(capsys, "train.ipynb")
    assert code == 1
    assert any(line.startswith("train.ipynb:cell 6:2:") and "ODL000" in line for line in out.splitlines()), out


def test_a_notebook_that_is_not_json_is_one_clear_line(project: Path, capsys) -> None:
    (project / "broken.ipynb").write_text('{"cells": [', encoding="utf-8")
    code, out, err = run(capsys, "broken.ipynb", "train.ipynb")
    assert code == 2
    assert err.splitlines() == ["odelint: error: broken.ipynb: not a valid notebook: invalid JSON at line 1 "
                                "column 12: Expecting value"]
    assert "train.ipynb:cell 3:3:24" in out, "the good notebook is still linted"


def test_a_notebook_of_another_language_is_skipped(project: Path, capsys) -> None:
    document = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "source": "x <- 1"}],
                "metadata": {"language_info": {"name": "R"}}, "nbformat": 4, "nbformat_minor": 5}
    (project / "stats.ipynb").write_text(json.dumps(document), encoding="utf-8")
    code, out, err = run(capsys, "stats.ipynb")
    assert code == 0
    assert err == "odelint: warning: stats.ipynb: its kernel language is R, not Python; skipped\n"


def test_non_python_files_named_explicitly_get_one_line_each(project: Path, capsys) -> None:
    (project / "notes.txt").write_text("opt_state = optim.init(model\n", encoding="utf-8")
    (project / "README.md").write_text("# Notes\n", encoding="utf-8")
    code, out, err = run(capsys, "notes.txt", "README.md")
    assert code == 0 and "ODL000" not in out
    assert err.splitlines() == ["odelint: warning: notes.txt: not a Python file or notebook; skipped",
                                "odelint: warning: README.md: not a Python file or notebook; skipped"]
    code, out, err = run(capsys, "notes.txt", "train.ipynb")
    assert code == 1 and "train.ipynb:cell 3" in out


def test_folders_pick_up_notebooks(project: Path, capsys) -> None:
    (project / "sub").mkdir()
    shutil.move(project / "train.ipynb", project / "sub" / "train.ipynb")
    code, out, _ = run(capsys, ".")
    assert code == 1 and out.startswith("sub/train.ipynb:cell 3:3:24: ODL201")


@pytest.mark.parametrize(("config", "args", "linted"), [
    ('extend-exclude = ["*.ipynb"]\n', [], False),
    ('include = ["*.py"]\n', [], False),
    ('include = ["*.py"]\nextend-include = ["sub/**/*.ipynb"]\n', [], True),
    ('include = ["*.py"]\n', ["--extend-include", "*.ipynb"], True),
    ("", ["--extend-exclude", "sub"], False),
])
def test_include_and_exclude_choose_the_notebooks(project: Path, capsys, config: str, args: list[str],
                                                  linted: bool) -> None:
    (project / "pyproject.toml").write_text(f"[tool.odelint]\n{config}", encoding="utf-8")
    (project / "sub").mkdir()
    shutil.move(project / "train.ipynb", project / "sub" / "train.ipynb")
    code, out, _ = run(capsys, *args, ".")
    assert (code, "sub/train.ipynb:cell 3" in out) == ((1, True) if linted else (0, False))


def test_the_cache_keeps_the_cell(project: Path, capsys) -> None:
    first = cli.main(["check", "--format", "json", "train.ipynb"]), capsys.readouterr().out
    second = cli.main(["check", "--format", "json", "train.ipynb"]), capsys.readouterr().out
    assert first == second and json.loads(second[1])[0]["cell"] == 3
    assert (project / ".odelint_cache").is_dir()


def test_changed_lines_on_both_sides_of_a_cell_boundary_stay_in_their_cells() -> None:
    book = notebook.read(NOTEBOOK.read_bytes())
    program = book.source.replace("import optax\n", "import optax as ox\n").replace(
        "model = eqx.nn.MLP", "model = eqx.nn.Linear")
    texts = book.cell_texts(program)
    assert texts[1].endswith("import jax\nimport optax as ox")
    assert texts[2].startswith("model = eqx.nn.Linear(")
    with pytest.raises(notebook.NotebookError, match="from one cell to another"):
        book.cell_texts(program.replace("import optax as ox\n", ""))


@pytest.mark.parametrize(("name", "kind"), [
    ("train.ipynb", kinds.NOTEBOOK), ("train.py", kinds.PYTHON), ("stubs.pyi", kinds.PYTHON),
    ("bin/train", kinds.PYTHON), ("requirements-dev.txt", kinds.TEXT), ("pyproject.toml", kinds.TEXT),
    ("notes.txt", None), ("README.md", None), ("data.json", None),
])
def test_file_kinds(name: str, kind: str | None) -> None:
    assert kinds.kind_of(name) == kind


def test_the_cache_key_says_the_file_is_a_notebook() -> None:
    data = NOTEBOOK.read_bytes()
    assert cache.key(data, "train.ipynb", kinds.NOTEBOOK) != cache.key(data, "train.ipynb", kinds.PYTHON)


def test_an_import_a_fix_needs_goes_into_the_first_code_cell(project: Path, capsys) -> None:
    path = project / "train.ipynb"
    document = json.loads(path.read_text(encoding="utf-8"))
    document["cells"][1]["source"] = ["%matplotlib inline\n", "from equinox import nn\n", "import jax\n",
                                      "import optax"]
    document["cells"][2]["source"][0] = document["cells"][2]["source"][0].replace("eqx.nn.MLP", "nn.MLP")
    path.write_text(json.dumps(document, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    assert run(capsys, "--fix", "train.ipynb")[0] == 0
    fixed = json.loads(path.read_text(encoding="utf-8"))
    assert fixed["cells"][1]["source"] == ["import equinox as eqx\n", *document["cells"][1]["source"]]
    assert fixed["cells"][2]["source"][2] == FIXED_LINE + "\n"
    assert [cell["outputs"] for cell in fixed["cells"] if "outputs" in cell] == \
        [cell["outputs"] for cell in document["cells"] if "outputs" in cell]
