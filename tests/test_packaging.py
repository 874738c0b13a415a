"""The wheel installs one package, `odelint`, with the rules and their data inside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_contains_only_the_odelint_package(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("odelint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    assert tops == {"odelint", wheel.name.split("-")[0] + "-" + wheel.name.split("-")[1] + ".dist-info"}
    assert "odelint/faces/cli.py" in names and "odelint/rules/optimisers/optimizer_init_unfiltered.py" in names
    assert "odelint/faces/report/sarif.py" in names
    assert "odelint/analysis/data/known_bad_versions.toml" in names, "the ODL501 table is package data"
    assert "odelint/rules/data/rule_index.json" in names, "the rules' metadata index is package data"
    assert not any(name.startswith(("lint/", "rules/", "tests/")) for name in names)
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "odelint = odelint.faces.cli:main" in entry_points
    assert "ODL = odelint.faces.flake8_plugin:Flake8Plugin" in entry_points


def test_python_dash_m_odelint_works() -> None:
    result = subprocess.run([sys.executable, "-m", "odelint", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("odelint ")
