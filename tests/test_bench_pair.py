"""bench/editor_pair.py: two builds' re-lints, taken in turns, each pair's ratio reported."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_paired_editor_benchmark_takes_turns_and_reports_each_pair() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "editor_pair.py"), "--against", sys.executable,
                           "--edits", "4"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    this, other, ratio = done.stdout.splitlines()
    for line, name in ((this, "this"), (other, "other")):
        assert re.fullmatch(rf"{name}: min [\d.]+ ms, median [\d.]+ ms, p95 [\d.]+ ms CPU per re-lint \(.+\)", line)
    found = re.fullmatch(r"this/other over 4 pairs: median ([\d.]+), quartiles ([\d.]+)\.\.([\d.]+)", ratio)
    assert found is not None and 0 < float(found[2]) <= float(found[1]) <= float(found[3])
