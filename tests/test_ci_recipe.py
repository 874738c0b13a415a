"""The GitHub Actions recipe checked into .github/workflows/odelint.yml: its odelint commands
parse with odelint's own argument parser, pass on this repository, and on the examples folder
(which has real mistakes) give the exit codes and formats GitHub expects."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.faces.cli import _normalise, build_parser

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "odelint.yml"


def _commands() -> list[list[str]]:
    runs = re.findall(r"^\s*run: (odelint .+)$", WORKFLOW.read_text(), flags=re.MULTILINE)
    return [shlex.split(command)[1:] for command in runs]


def _on_examples(args: list[str]) -> list[str]:
    """The same command with the examples folder in place of the paths it lints."""
    paths = set(build_parser().parse_args(_normalise(args)).paths)
    return [*(arg for arg in args if arg not in paths), "examples"]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odelint", *args, "--no-cache"], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_workflow_has_a_sarif_upload_and_an_annotation_step() -> None:
    text = WORKFLOW.read_text()
    assert "github/codeql-action/upload-sarif@" in text and "security-events: write" in text
    formats = [build_parser().parse_args(_normalise(args)).format for args in _commands()]
    assert formats == ["sarif", "github"]


@pytest.mark.parametrize("args", _commands(), ids=lambda args: args[args.index("--format") + 1])
def test_workflow_command_passes_on_this_repository(args: list[str], tmp_path: Path) -> None:
    parsed = build_parser().parse_args(_normalise(args))
    assert parsed.command == "check"
    result = _run([arg if arg != "odelint.sarif" else str(tmp_path / "odelint.sarif") for arg in args], ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("args", _commands(), ids=lambda args: args[args.index("--format") + 1])
def test_workflow_command_on_the_examples(args: list[str], tmp_path: Path) -> None:
    examples = [arg if arg != "odelint.sarif" else str(tmp_path / "odelint.sarif") for arg in _on_examples(args)]
    result = _run(examples, ROOT)
    if "--exit-zero" in examples:
        assert result.returncode == 0 and result.stdout == ""
        document = json.loads((tmp_path / "odelint.sarif").read_text())
        assert document["version"] == "2.1.0" and document["runs"][0]["results"]
    else:
        assert result.returncode == 1, "findings fail the job"
        lines = result.stdout.splitlines()
        kinds = ("::warning title=odelint (ODL", "::error title=odelint (ODL0")
        assert lines and all(line.startswith(kinds) for line in lines)
