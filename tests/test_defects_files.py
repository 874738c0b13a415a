"""Issue 22's file and engine defects: each case reproduces what a user (or an attacker) did.

Every case runs the real command in a scratch folder: nothing lost (findings, owners, links,
stray temporary files), nothing hangs (FIFOs, dying workers), nothing surprises (stale cache
results, valid code called a syntax error).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HAZARD = ("import equinox as eqx\nimport optax\n\n"
          "model = eqx.nn.MLP(2, 2, 8, 1, key=None)\nstate = optax.adam(1e-3).init(model)\n")
FIXED = "optax.adam(1e-3).init(eqx.filter(model, eqx.is_array))"


def odelint(*args: str, cwd: Path, timeout: int = 120, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "odelint", *args], cwd=cwd, capture_output=True, timeout=timeout,
                            input=stdin)
    out = result.stdout.decode("utf-8", "replace") + result.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out, out
    return result


def out(result: subprocess.CompletedProcess) -> str:
    return result.stdout.decode("utf-8", "replace")


def err(result: subprocess.CompletedProcess) -> str:
    return result.stderr.decode("utf-8", "replace")


def codes(result: subprocess.CompletedProcess, name: str) -> list[str]:
    return [line.split()[1] for line in out(result).splitlines() if line.startswith(f"{name}:")]


# ---- 13: a NUL byte anywhere is what CPython refuses


@pytest.mark.parametrize("where", ["comment", "string"])
def test_a_nul_byte_after_the_first_8_kib_is_odl000(tmp_path: Path, where: str) -> None:
    tail = b"# c \x00\n" if where == "comment" else b"s = 'a\x00b'\n"
    (tmp_path / "late.py").write_bytes(b"x = 1\n#" + b"x" * 9000 + b"\n" + tail)
    result = odelint("check", "--no-cache", "-q", "late.py", cwd=tmp_path)
    assert result.returncode == 1
    assert codes(result, "late.py") == ["ODL000"] and "null bytes" in out(result)


# ---- 15: valid code CPython compiles is never a syntax error


@pytest.mark.parametrize("expression", [
    " and ".join(f"a{i}" for i in range(1000)),
    "(" + " ".join(f"'s{i}'" for i in range(1000)) + ")",
])
@pytest.mark.parametrize("mode", ["check", "--fix"])
def test_long_chains_cpython_compiles_are_linted(tmp_path: Path, expression: str, mode: str) -> None:
    source = HAZARD + f"y = {expression}\n"
    compile(source, "deep.py", "exec")
    (tmp_path / "deep.py").write_text(source)
    args = ("--fix",) if mode == "--fix" else ()
    result = odelint("check", "--no-cache", "-q", *args, "deep.py", cwd=tmp_path)
    assert "ODL000" not in out(result) and "ODL001" not in out(result)
    if mode == "--fix":
        assert result.returncode == 0 and FIXED in (tmp_path / "deep.py").read_text()
    else:
        assert codes(result, "deep.py") == ["ODL201"]


def test_code_too_deep_even_with_room_is_one_odl001_line_not_a_syntax_error() -> None:
    from odelint.engine import core

    source = HAZARD + "y = " + " and ".join(f"a{i}" for i in range(1000)) + "\n"
    original = core._ROOMY_RECURSION_LIMIT
    core._ROOMY_RECURSION_LIMIT = 0  # no more room than the default: the second try runs out too
    try:
        [finding] = core.lint_source(source, "deep.py").findings
    finally:
        core._ROOMY_RECURSION_LIMIT = original
    assert finding.code == "ODL001" and "Python accepts it" in finding.message
