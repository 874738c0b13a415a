"""The pre-commit hooks: which files they take, and a real `pre-commit try-repo` of this checkout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from odelint.api.registry import file_patterns
from odelint.engine.core import fix_source

clientlib = pytest.importorskip("pre_commit.clientlib")
identify = pytest.importorskip("identify.identify")

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / ".pre-commit-hooks.yaml"
PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
TRAIN = ("import equinox as eqx\nimport jax\nimport optax\n\n"
         "model = eqx.nn.MLP(2, 2, 16, 2, key=jax.random.PRNGKey(0))\n"
         "optim = optax.adam(1e-3)\nopt_state = optim.init(model)\n")


def hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in clientlib.load_manifest(str(MANIFEST))}


def selected(hook: dict, name: str) -> bool:
    """pre-commit's own filter: `files` must match and one of `types_or` must be among the file's tags."""
    tags = identify.tags_from_filename(name)
    return bool(re.search(hook["files"], name)) and bool(tags & set(hook["types_or"])) \
        and not re.search(hook["exclude"], name)


def test_two_hooks_check_and_fix():
    found = hooks()
    assert set(found) == {"odelint", "odelint-fix"}
    # pre-commit names files explicitly: --force-exclude keeps `exclude` in force for them
    assert found["odelint"]["entry"] == "odelint check --force-exclude"
    assert found["odelint-fix"]["entry"] == "odelint check --fix --force-exclude"
    assert all(hook["language"] == "python" and hook["require_serial"] for hook in found.values())


@pytest.mark.parametrize("hook_id", ["odelint", "odelint-fix"])
def test_hooks_take_every_file_a_rule_reads(hook_id):
    hook = hooks()[hook_id]
    for pattern in file_patterns():
        for folder in ("", "deps/"):
            name = folder + pattern.replace("*", "-dev")
            assert selected(hook, name), f"{hook_id} skips {name} ({pattern})"
    for name in ("train.py", "pkg/stubs.pyi", "requirements.txt", "ci/constraints-gpu.txt", "environment.yml",
                 "explore.ipynb", "notebooks/train.ipynb"):
        assert selected(hook, name), name
    for name in ("README.md", "data.json", "notes.txt", "tox.ini", "myrequirements.txt", "setup.cfg.bak"):
        assert not selected(hook, name), name


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=odelint", "-c", "user.email=odelint@example.invalid",
                    "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True, capture_output=True)


def _snapshot(target: Path) -> Path:
    """This checkout as it is on disk (uncommitted and new files included) as a one-commit repository.

    try-repo on the checkout itself would see only committed and staged changes."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "snapshot")
    return target


@pytest.mark.slow
@pytest.mark.skipif(PRE_COMMIT is None or shutil.which("git") is None, reason="needs pre-commit and git")
def test_try_repo_lints_then_fixes(tmp_path):
    """Installs this checkout into pre-commit's own virtualenv (pip reaches PyPI for its dependencies)."""
    repo = _snapshot(tmp_path / "odelint")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN, encoding="utf-8")
    (project / "clean.py").write_text("import optax\n\noptim = optax.sgd(0.1)\n", encoding="utf-8")
    (project / "README.md").write_text("opt_state = optim.init(model)\n", encoding="utf-8")
    _git(project, "init", "-q")
    _git(project, "add", "-A")

    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PRE_COMMIT_COLOR": "never"}
    done = subprocess.run([PRE_COMMIT, "try-repo", str(repo), "--all-files", "--verbose"], cwd=project, env=env,
                          capture_output=True, text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    # hooks run sorted by id: first the check reports the finding, then the fix rewrites the file
    assert re.search(r"^odelint\.+Failed$", output, re.MULTILINE), output
    assert "train.py:7:24: ODL201" in output
    assert re.search(r"^odelint \(fix\)\.+Failed$", output, re.MULTILINE), output
    assert "files were modified by this hook" in output
    assert (project / "train.py").read_text(encoding="utf-8") == fix_source(TRAIN, "train.py").source
