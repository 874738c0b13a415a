"""The scheduled job that confirms ODL501 with its old pins (.ci/oldpins and its workflow):
it runs on a schedule, and its odelint command parses with odelint's own parser and asks
for the pin environments."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from odelint.faces.cli import _normalise, build_parser

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / ".ci" / "oldpins"
WORKFLOW = ROOT / ".github" / "workflows" / "oldpins.yml"


def test_the_workflow_runs_the_script_on_a_schedule() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert re.search(r"^\s+schedule:\n\s+- cron: \"[^\"]+\"$", text, flags=re.MULTILINE)
    assert re.search(r"^\s+run: \.ci/oldpins$", text, flags=re.MULTILINE)
    assert SCRIPT.stat().st_mode & 0o111, ".ci/oldpins must be executable"


def test_the_script_confirms_odl501_in_its_pin_environments() -> None:
    (line,) = [line for line in SCRIPT.read_text(encoding="utf-8").splitlines() if "odelint confirm" in line]
    words = shlex.split(line.split(">")[0])
    args = build_parser().parse_args(_normalise(words[words.index("confirm"):]))
    assert (args.command, args.rule, args.with_old_pins, args.device, args.format) == \
        ("confirm", ["ODL501"], True, "cpu", "json")
