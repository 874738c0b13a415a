"""`odelint confirm` from an installed wheel, run outside the source checkout: the fixtures
ship with the package (odelint/fixtures), so the rules are proven on the user's own versions."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, unpacked into a folder that goes first on PYTHONPATH (before the editable install)."""
    wheels = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    site = tmp_path_factory.mktemp("site")
    zipfile.ZipFile(next(wheels.glob("odelint-*.whl"))).extractall(site)
    return site


def _elsewhere(installed: Path, tmp_path: Path, *command: str) -> subprocess.CompletedProcess[str]:
    elsewhere = tmp_path / "a project"
    elsewhere.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(installed), "JAX_PLATFORMS": "cpu"}
    return subprocess.run([sys.executable, *command], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=600)


def test_the_wheel_ships_every_rules_fixtures(installed: Path) -> None:
    shipped = installed / "odelint" / "fixtures"
    for folder in (ROOT / "tests" / "fixtures").iterdir():
        if folder.is_dir():
            assert sorted(p.name for p in (shipped / folder.name).iterdir()) == sorted(
                p.name for p in folder.iterdir() if p.is_file()), folder.name
    assert (shipped / "ODL501" / "requirements-bad.txt").is_file()


def test_confirm_finds_the_installed_fixtures_from_any_folder(installed: Path, tmp_path: Path) -> None:
    done = _elsewhere(installed, tmp_path, "-c", "from odelint.proof import confirm; print(confirm.fixtures_folder())")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(installed / "odelint" / "fixtures")


@pytest.mark.jax
@pytest.mark.skipif(any(importlib.util.find_spec(name) is None for name in ("jax", "equinox")),
                    reason="needs the JAX extra: pip install odelint[jax]")
def test_confirm_proves_a_rule_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    done = _elsewhere(installed, tmp_path, "-m", "odelint", "confirm", "--rule", "ODL603", "--device", "cpu",
                      "--format", "json")
    assert done.returncode == 0, done.stderr
    (rule,) = json.loads(done.stdout)["rules"]
    assert (rule["code"], rule["confirmed"]) == ("ODL603", "yes")
    assert "no fixtures" not in done.stderr
