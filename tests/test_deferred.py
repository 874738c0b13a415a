"""Importing odelint, its rules and its faces loads no LibCST: a warm run needs none."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import odelint.faces.cli, odelint.engine.runner, odelint.engine.core, odelint.faces.report.sarif, odelint.api.docs
from odelint.api.registry import all_rules, file_patterns
all_rules(); file_patterns()
print(sorted(m for m in sys.modules if m.startswith("libcst.")))
"""


def test_importing_odelint_and_every_rule_loads_no_libcst() -> None:
    result = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_stand_in_becomes_the_real_module_on_first_use() -> None:
    code = ("import odelint, libcst as cst, sys\n"
            "module = cst.parse_module('x = 1\\n')\n"
            "import libcst.metadata\n"
            "print(type(module).__name__, cst.metadata.PositionProvider.__name__, sys.modules['libcst'] is not cst)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == ["Module", "PositionProvider", "True"], result.stderr
