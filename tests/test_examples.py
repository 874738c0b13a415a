"""The bundled example project: the README's first command shows these findings, and
`--fix` repairs it into a program that trains under JAX."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = {
    ("neural_ode/train.py", "ODL201"), ("neural_ode/train.py", "ODL202"),
    ("neural_ode/finetune.py", "ODL203"), ("neural_ode/finetune.py", "ODL204"),
}


def _odelint(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "odelint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_examples_show_the_optimiser_findings() -> None:
    result = _odelint("check", "--no-cache", "--format", "json", ".", cwd=ROOT / "examples")
    assert result.returncode == 1
    found = {(f["path"], f["code"]) for f in json.loads(result.stdout)}
    assert EXPECTED <= found


@pytest.fixture
def fixed_examples(tmp_path: Path) -> Path:
    copy = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", copy)
    result = _odelint("check", "--fix", "--unsafe-fixes", "--no-cache", "--select", "ODL2", ".", cwd=copy)
    assert result.returncode == 0, result.stdout + result.stderr
    return copy


def test_fix_repairs_every_optimiser_finding(fixed_examples: Path) -> None:
    result = _odelint("check", "--no-cache", "--select", "ODL2", "--format", "json", ".", cwd=fixed_examples)
    assert json.loads(result.stdout) == []


@pytest.mark.jax
@pytest.mark.parametrize("script", ["neural_ode/train.py", "neural_ode/finetune.py"])
def test_fixed_examples_train_under_jax(fixed_examples: Path, script: str) -> None:
    pytest.importorskip("jax")
    pytest.importorskip("equinox")
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    broken = subprocess.run([sys.executable, str(ROOT / "examples" / script)], capture_output=True, text=True,
                            timeout=300, env=env)
    assert broken.returncode != 0, "the unfixed example should fail"
    result = subprocess.run([sys.executable, str(fixed_examples / script)], capture_output=True, text=True,
                            timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    start, end = (float(x) for x in result.stdout.split("loss ")[1].split(" -> "))
    assert end < start
