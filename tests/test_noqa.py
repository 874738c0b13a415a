"""noqa directives: only real comments count; file-level exemptions under both faces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from odelint.engine import noqa
from odelint.engine.core import lint_source

HAZARD = ("import equinox as eqx\nimport optax\nmodel = eqx.nn.MLP(2, 2, 8, 1, key=None)\n"
          "optim = optax.adamw(1e-3)\nopt_state = optim.init(model){tail}\n"
          "updates, opt_state = optim.update({{}}, opt_state)\n")


def codes(source: str) -> list[str]:
    return [f.code for f in lint_source(source, "m.py").findings]


def test_noqa_inside_a_string_does_not_suppress() -> None:
    assert codes(HAZARD.format(tail='; label = "# noqa"')) == ["ODL201", "ODL203"]
    assert codes(HAZARD.format(tail="; label = '# noqa: ODL201'")) == ["ODL201", "ODL203"]
    assert codes(HAZARD.format(tail="  # noqa: ODL201")) == ["ODL203"]


def test_noqa_text_inside_a_multiline_string_is_no_file_directive() -> None:
    source = HAZARD.format(tail="") + 'DOC = """\n# odelint: noqa\n"""\n'
    assert codes(source) == ["ODL201", "ODL203"]


@pytest.mark.parametrize("header, expected", [
    ("# odelint: noqa\n", []),
    ("# flake8: noqa\n", []),
    ("# odelint: noqa: ODL201\n", ["ODL203"]),
    ("# flake8: noqa: ODL203\n", []),   # flake8 skips such a file whole; so does odelint
    ("# ODELINT: NOQA: ODL201, ODL203\n", []),
    ("x = 1  # odelint: noqa\n", ["ODL201", "ODL203"]),   # not on its own line: no file directive
    ("# odelint: noqa: ODL2 please\n", ["ODL201", "ODL203"]),  # not a directive, not a blanket either
])
def test_file_level_directives(header: str, expected: list[str]) -> None:
    assert codes(header + HAZARD.format(tail="")) == expected


def test_file_level_directive_never_hides_a_syntax_error() -> None:
    assert codes("# odelint: noqa\nimport optax\ndef f(:\n") == ["ODL000"]


def test_add_noqa_merges_with_the_comment_not_with_a_string() -> None:
    source = HAZARD.format(tail='; label = "# noqa: E501"')
    findings = lint_source(source, "m.py").findings
    added = noqa.add_noqa(source, findings)
    assert 'opt_state = optim.init(model); label = "# noqa: E501"  # noqa: ODL201\n' in added
    assert codes(added) == []


def _flake8(folder: Path, *args: str) -> list[str]:
    result = subprocess.run([sys.executable, "-m", "flake8", *args], cwd=folder, capture_output=True, text=True,
                            timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return [line.split(" ")[1] for line in result.stdout.splitlines()]


def test_file_level_directives_under_flake8(tmp_path: Path) -> None:
    pytest.importorskip("flake8")
    body = HAZARD.format(tail="")
    (tmp_path / "all.py").write_text("# odelint: noqa\n" + body)
    (tmp_path / "whole.py").write_text("# flake8: noqa: ODL201\n" + body)
    (tmp_path / "some.py").write_text("# odelint: noqa: ODL201\n" + body)
    (tmp_path / "plain.py").write_text(body)
    assert _flake8(tmp_path, "--select", "ODL", "all.py") == []
    assert _flake8(tmp_path, "--select", "ODL", "some.py") == ["ODL203"]
    assert _flake8(tmp_path, "--select", "ODL", "whole.py") == []
    assert _flake8(tmp_path, "--select", "ODL", "plain.py") == ["ODL201", "ODL203"]
    assert _flake8(tmp_path, "--select", "ODL", "--disable-noqa", "all.py") == ["ODL201", "ODL203"]
