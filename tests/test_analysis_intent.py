"""Expected-error contexts (odelint.analysis.intent) and what the engine does there: a rule
whose hazard is an error stays quiet, a silent-value rule reports without a fix, a safe fix
never rewrites a test that expects the error, and a notebook cell whose saved output is the
error it demonstrates is never rewritten."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import libcst as cst
import pytest
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.intent import ExpectedErrors
from odelint.analysis.scopes import build_scope_index
from odelint.engine.core import fix_source, lint_source
from odelint.faces import cli


def regions(source: str) -> list[str]:
    module = cst.parse_module(textwrap.dedent(source))
    facts = Facts(build_scope_index(module, model_node_types()))
    return [module.code_for_node(node).strip().splitlines()[0] for node, _ in ExpectedErrors(facts).regions()]


def test_pytest_unittest_numpy_contexts_and_xfail_are_expected_errors() -> None:
    found = regions("""
        import unittest
        import numpy.testing as npt
        import pytest
        from pytest import raises as expect

        def test_a(f):
            with pytest.raises(ValueError, match="bad"):
                f()
            with expect(TypeError):
                f()
            if True:
                with pytest.warns(UserWarning):
                    f()
            with npt.assert_raises(ValueError):
                f()

        @pytest.mark.xfail(raises=AttributeError)
        def test_b(f):
            f()

        class T(unittest.TestCase):
            def test_c(self, f):
                with self.assertRaisesRegex(ValueError, "bad"):
                    f()
                self.assertRaises(ValueError, f, 1)
    """)
    assert found == ['with pytest.raises(ValueError, match="bad"):', "with expect(TypeError):",
                     "with pytest.warns(UserWarning):", "with npt.assert_raises(ValueError):",
                     "@pytest.mark.xfail(raises=AttributeError)", 'with self.assertRaisesRegex(ValueError, "bad"):',
                     "self.assertRaises(ValueError, f, 1)"]


def test_look_alikes_are_not_expected_errors() -> None:
    assert regions("""
        import pytest

        def raises(e):
            return open(e)

        @pytest.mark.xfail(reason="flaky")
        def test_a(f):
            with raises("x"):
                f()
            with pytest.raises(ValueError) if False else open("x"):
                f()
            self.assertRaises(ValueError)
    """) == []


def test_one_statement_guarded_by_a_handler_of_every_error_is_an_expected_error() -> None:
    assert regions("""
        import jax.numpy as jnp

        x = jnp.zeros(3)
        try:
            x[1] = 1.0
        except Exception as e:
            print("Exception {}".format(e))
        try:
            y = x.block_until_ready()
        except:
            y = None
        def probe(f, x):
            try:
                return f(x)
            except (ValueError, BaseException):
                return None
    """) == ["x[1] = 1.0", "y = x.block_until_ready()", "return f(x)"]


def test_handlers_that_re_raise_or_catch_one_error_and_longer_bodies_are_not_expected_errors() -> None:
    assert regions("""
        import jax.numpy as jnp

        class Exception(RuntimeError):
            pass

        x = jnp.zeros(3)
        try:
            x[1] = 1.0
        except Exception:
            pass
        try:
            x[1] = 1.0
        except BaseException as e:
            raise RuntimeError("in-place update") from e
        try:
            x[1] = 1.0
        except KeyError:
            pass
        try:
            x = jnp.ones(3)
            x[1] = 1.0
        except BaseException:
            pass
    """) == []


def test_a_tutorial_that_prints_the_error_it_demonstrates_is_quiet() -> None:
    demo = textwrap.dedent("""
        import jax.numpy as jnp

        jax_array = jnp.zeros((3, 3), dtype=jnp.float32)
        try:
            jax_array[1, :] = 1.0
        except Exception as e:
            print("Exception {}".format(e))
        jax_array[2, :] = 1.0
    """)
    found = lint_source(demo, "sharp_bits.py", {"ODL701"}).findings
    assert [f.span.line for f in found] == [9]  # only the assignment outside the demonstration


MODULE_MUTATION = """
import equinox as eqx
import jax.numpy as jnp
import pytest


class Linear(eqx.Module):
    weight: jnp.ndarray

    def __init__(self) -> None:
        self.weight = jnp.ones(3)


def test_modules_are_frozen() -> None:
    layer = Linear()
    with pytest.raises(AttributeError):
        layer.weight = jnp.zeros(3)


def train(layer: Linear) -> None:
    layer.weight = jnp.zeros(3)
"""


def test_a_rule_whose_hazard_is_the_expected_error_is_quiet_there() -> None:
    findings = lint_source(MODULE_MUTATION, "test_linear.py", {"ODL604"}).findings
    assert [finding.span.line for finding in findings] == [21]


FILTER_GRAD = """
import equinox as eqx
import jax.numpy as jnp
import pytest


def loss(model, x):
    return jnp.sum(model(x))


def test_keyword_model_is_rejected(model, x) -> None:
    with pytest.raises(ValueError):
        eqx.filter_grad(loss)(model=model, x=x)


def step(model, x):
    return eqx.filter_grad(loss)(model=model, x=x)
"""


def test_a_safe_fix_never_rewrites_a_test_that_expects_the_error() -> None:
    fixed = fix_source(FILTER_GRAD, "test_grad.py", {"ODL605"})
    assert fixed.applied == 1
    assert "        eqx.filter_grad(loss)(model=model, x=x)\n" in fixed.source  # the test, untouched
    assert "    return eqx.filter_grad(loss)(model, x=x)\n" in fixed.source   # the real code, fixed


WHERE = """
import jax
import jax.numpy as jnp
import pytest


def safe_log(x):
    return jnp.where(x > 0, jnp.log(x), 0.0)


@pytest.mark.xfail(raises=AssertionError)
def test_gradient_is_finite_at_zero():
    g = jax.grad(lambda x: jnp.where(x > 0, jnp.log(x), 0.0))(0.0)
    assert jnp.isfinite(g)
"""


def test_a_silent_value_rule_reports_without_a_fix_there() -> None:
    findings = lint_source(WHERE, "test_log.py", {"ODL706"}).findings
    in_test = [finding for finding in findings if finding.span.line == 13]
    assert in_test and not any(finding.fixable for finding in in_test)


def _cell(source: str, outputs: list[dict]) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": outputs,
            "source": source.splitlines(keepends=True)}


def _fixed_notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                    cells: list[dict], code: str) -> tuple[list[dict], str]:
    """`odelint check --select <code> --fix` on a notebook of these cells: its cells after, and the summary."""
    document = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                "nbformat_minor": 5}
    path = tmp_path / "demo.ipynb"
    path.write_text(json.dumps(document, indent=1) + "\n")
    monkeypatch.chdir(tmp_path)
    cli.main(["check", "--no-cache", "--select", code, "--fix", "demo.ipynb"])
    return json.loads(path.read_text())["cells"], capsys.readouterr().out


def test_a_notebook_cell_that_demonstrates_the_error_is_never_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    error = {"output_type": "error", "ename": "ValueError", "evalue": "...", "traceback": []}
    cells = [_cell("import equinox as eqx\nimport jax.numpy as jnp\n\ndef loss(model, x):\n"
                   "    return jnp.sum(model(x))\n", []),
             _cell("eqx.filter_grad(loss)(model=model, x=x)\n", [error]),
             _cell("grads = eqx.filter_grad(loss)(model=model, x=x)\n", [])]
    after, out = _fixed_notebook(tmp_path, monkeypatch, capsys, cells, "ODL605")
    assert after[1]["source"] == ["eqx.filter_grad(loss)(model=model, x=x)\n"]     # the demonstration
    assert after[2]["source"] == ["grads = eqx.filter_grad(loss)(model, x=x)\n"]  # the real use, fixed
    # ODL605's error is what the demonstration shows: not reported there (its expected-errors policy)
    assert "Found 1 finding (1 fixed, 0 remaining)" in out


@pytest.mark.parametrize("shown", [
    {"metadata": {"tags": ["raises-exception"]}, "outputs": []},
    {"outputs": [{"output_type": "stream", "name": "stdout",
                  "text": ["Traced<ShapedArray(float32[])>with<DynamicJaxprTrace>\n"]}]},
    {"outputs": [{"output_type": "stream", "name": "stderr",
                  "text": ["Traceback (most recent call last):\n", "  ...\n"]}]},
])
def test_a_cell_whose_saved_state_shows_the_failure_is_never_rewritten(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], shown: dict) -> None:
    demo = _cell("@jax.jit\ndef f(x):\n    print(x)\n    return 2 * x\n\nf(2.0)\n", shown.get("outputs", []))
    demo["metadata"] = shown.get("metadata", {})
    cells = [_cell("import jax\n", []), demo,
             _cell("@jax.jit\ndef g(x):\n    print(x)\n    return x\n", [])]
    after, out = _fixed_notebook(tmp_path, monkeypatch, capsys, cells, "ODL703")
    assert after[1]["source"] == demo["source"]                       # the demonstration stays
    assert "jax.debug.print" in "".join(after[2]["source"])           # the real use is fixed
    assert "Found 1 finding (1 fixed, 0 remaining)" in out            # the demonstration is not reported


def test_a_finding_whose_symptom_the_cell_shows_is_not_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A cell whose saved output shows `dtype('float32')` after asking for float64 has shown its
    author the truncation ODL707 predicts; the same request without that output is reported, and
    the output silences only the rule whose symptom it is (ODL703's print of a tracer stays)."""
    shown = {"output_type": "execute_result", "execution_count": 2, "metadata": {},
             "data": {"text/plain": ["dtype('float32')"]}}
    request = "x = jax.random.uniform(jax.random.PRNGKey(0), (3,), dtype=jnp.float64)\n"
    cells = [_cell("import jax\nimport jax.numpy as jnp\n", []),
             _cell(request + "x.dtype\n", [shown]),
             _cell(request + "@jax.jit\ndef f(y):\n    print(y)\n    return y\nf(x).dtype\n", [shown]),
             _cell(request, [])]
    document = {"cells": cells, "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
                "nbformat_minor": 5}
    (tmp_path / "demo.ipynb").write_text(json.dumps(document, indent=1) + "\n")
    monkeypatch.chdir(tmp_path)
    cli.main(["check", "--no-cache", "--select", "ODL703,ODL707", "--format", "concise", "demo.ipynb"])
    found = [line.split(": ")[1].split()[0] + " " + line.split(":")[1] for line in capsys.readouterr().out.splitlines()
             if line.startswith("demo.ipynb")]
    assert found == ["ODL703 cell 3", "ODL707 cell 4"]


def test_a_cell_that_shows_a_symptom_keeps_it_through_a_fix_of_its_own_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A fix that rewrites the first line of a cell whose output shows ODL707's symptom (the
    cell is not a failure, so other rules' fixes apply there): the cell's range follows the
    rewritten line into the next round, and ODL707 stays unreported after the fix."""
    shown = {"output_type": "execute_result", "execution_count": 2, "metadata": {},
             "data": {"text/plain": ["dtype('float32')"]}}
    cells = [_cell("import jax\nimport jax.numpy as jnp\n", []),
             _cell("y = jax.tree_map(lambda v: v + 1, [1.0])\n"
                   "x = jax.random.uniform(jax.random.PRNGKey(0), (3,), dtype=jnp.float64)\nx.dtype\n", [shown])]
    after, out = _fixed_notebook(tmp_path, monkeypatch, capsys, cells, "ODL707,ODL901")
    assert after[1]["source"][0] == "y = jax.tree.map(lambda v: v + 1, [1.0])\n"  # the other rule's fix applies
    assert "Found 1 finding (1 fixed, 0 remaining)" in out                        # ODL707 never reported


# ---- x64 switched on elsewhere in the project (odelint.analysis.x64), honoured by ODL707

REQUEST = "import jax.numpy as jnp\n\nx = jnp.zeros(3, dtype=jnp.float64)\n"


@pytest.mark.parametrize(("where", "text"), [
    ("tests/conftest.py", 'import jax\n\njax.config.update("jax_enable_x64", True)\n'),
    ("conftest.py", ("import jax\nimport pytest\n\n@pytest.fixture(autouse=True)\ndef x64():\n"
                     "    with jax.enable_x64():\n        yield\n")),
    ("tests/__init__.py", 'from jax import config\n\nconfig.update("jax_enable_x64", 1)\n'),
    ("pyproject.toml", '[project]\nname = "p"\n\n[tool.pytest.ini_options]\nenv = ["D:JAX_ENABLE_X64=1"]\n'),
    ("pytest.ini", "[pytest]\nenv =\n    JAX_ENABLE_X64=True\n"),
    ("tox.ini", "[testenv]\nsetenv =\n    JAX_ENABLE_X64 = 1\n"),
    ("setup.cfg", "[tool:pytest]\nenv =\n    JAX_ENABLE_X64=1\n"),
])
def test_x64_enabled_in_the_project_covers_the_tests(tmp_path: Path, where: str, text: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    test = tmp_path / "tests" / "test_solver.py"
    test.write_text(REQUEST)
    assert lint_source(REQUEST, str(test), {"ODL707"}).findings  # before: nothing switches it on
    (tmp_path / where).write_text(text)
    assert not lint_source(REQUEST, str(test), {"ODL707"}).findings


@pytest.mark.parametrize(("where", "text"), [
    ("tests/conftest.py", 'import jax\n\njax.config.update("jax_enable_x64", False)\n'),
    ("pyproject.toml", '[tool.pytest.ini_options]\nenv = ["JAX_ENABLE_X64=0"]\n'),
    ("other/conftest.py", 'import jax\n\njax.config.update("jax_enable_x64", True)\n'),
])
def test_x64_switched_off_or_elsewhere_does_not_cover(tmp_path: Path, where: str, text: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    (tmp_path / "other").mkdir()
    test = tmp_path / "tests" / "test_solver.py"
    test.write_text(REQUEST)
    (tmp_path / where).write_text(text)
    assert lint_source(REQUEST, str(test), {"ODL707"}).findings


def test_pytest_env_does_not_cover_library_code(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\nenv = ["JAX_ENABLE_X64=1"]\n')
    (tmp_path / "pkg").mkdir()
    module = tmp_path / "pkg" / "solver.py"
    module.write_text(REQUEST)
    assert lint_source(REQUEST, str(module), {"ODL707"}).findings


def test_a_cached_result_depends_on_the_conftest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "test_solver.py").write_text(REQUEST)
    monkeypatch.chdir(tmp_path)
    arguments = ["check", "--select", "ODL707", "--cache-dir", str(tmp_path / "cache"), "test_solver.py"]
    assert cli.main(arguments) == 1
    (tmp_path / "conftest.py").write_text('import jax\n\njax.config.update("jax_enable_x64", True)\n')
    assert cli.main(arguments) == 0   # the new conftest.py invalidates the cached finding
    (tmp_path / "conftest.py").write_text("import jax\n")
    assert cli.main(arguments) == 1
    capsys.readouterr()


# ---- x64 switched on by the program's entry module, which imports the file

SWITCH = 'import jax\n\njax.config.update("jax_enable_x64", True)\n'
SOLVER = "pkg/solver.py"


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / ".git").mkdir()
    for name, text in {"pkg/__init__.py": "", SOLVER: REQUEST, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root / SOLVER


def _flags(path: Path) -> bool:
    return bool(lint_source(path.read_text(), str(path), {"ODL707"}).findings)


@pytest.mark.parametrize("files", [
    {"train.py": SWITCH + "\nfrom pkg.solver import solve\n"},                      # a top-level script
    {"pkg/__main__.py": SWITCH + "\nfrom . import solver\n"},                        # python -m pkg
    {"run.py": ("import jax\nfrom pkg import solver\n\ndef main():\n"
                '    jax.config.update("jax_enable_x64", True)\n    solver.solve()\n\n'
                'if __name__ == "__main__":\n    main()\n')},                          # switched on in main()
    {"train.py": SWITCH + "\nimport pkg.trainer\n",                                  # through another module
     "pkg/trainer.py": "from pkg.solver import solve\n"},
    {"experiments/fit.py": SWITCH + "\nfrom pkg import solver\n",                     # a pyproject script
     "pyproject.toml": '[project]\nname = "p"\n\n[project.scripts]\nfit = "experiments.fit:main"\n'},
    {"scripts/train.py": SWITCH + "\nfrom pkg.solver import solve\n",                 # packages beside the script
     "scripts/pkg/__init__.py": "", "scripts/pkg/solver.py": REQUEST,
     "pyproject.toml": '[project.scripts]\ntrain = "scripts.train:main"\n'},
])
def test_x64_switched_on_by_an_entry_module_covers_what_it_imports(tmp_path: Path, files: dict[str, str]) -> None:
    solver = _project(tmp_path, {})
    assert _flags(solver)
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    if "scripts/pkg/solver.py" in files:
        solver = tmp_path / "scripts/pkg/solver.py"
    assert not _flags(solver)


@pytest.mark.parametrize("files", [
    {"train.py": SWITCH + "\nfrom pkg import other\n", "pkg/other.py": ""},          # imports something else
    {"helpers.py": ("import jax\nfrom pkg import solver\n\ndef use_double():\n"
                    '    jax.config.update("jax_enable_x64", True)\n')},             # a helper, not a program
    {"test_solver.py": SWITCH + "\nfrom pkg.solver import solve\n"},                 # a test module
    {"other/train.py": SWITCH + "\nfrom pkg.solver import solve\n"},                 # not above the file
    {"train.py": 'import jax\n\njax.config.update("jax_enable_x64", False)\nfrom pkg import solver\n'},
])
def test_entry_modules_that_do_not_run_the_file_in_x64_do_not_cover(tmp_path: Path, files: dict[str, str]) -> None:
    assert _flags(_project(tmp_path, files))


def test_the_realistic_program_runs_its_model_in_x64(tmp_path: Path) -> None:
    """tests/programs/x64_entry: train.py switches x64 on and imports orbits.fit, which imports
    orbits.model; both request float64 and are quiet, and flagged once train.py is gone."""
    program = Path(__file__).parent / "programs" / "x64_entry"
    for name in ("orbits/fit.py", "orbits/model.py"):
        assert not _flags(program / name)
    copy = tmp_path / "x64_entry"
    (tmp_path / ".git").mkdir()
    for source in program.rglob("*.py"):
        if source.name != "train.py":
            (copy / source.relative_to(program)).parent.mkdir(parents=True, exist_ok=True)
            (copy / source.relative_to(program)).write_text(source.read_text())
    assert _flags(copy / "orbits/fit.py") and _flags(copy / "orbits/model.py")


def test_a_cached_result_depends_on_the_scripts_beside_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, {})
    monkeypatch.chdir(tmp_path)
    arguments = ["check", "--select", "ODL707", "--cache-dir", str(tmp_path / "cache"), SOLVER]
    assert cli.main(arguments) == 1
    (tmp_path / "train.py").write_text(SWITCH + "\nfrom pkg.solver import solve\n")
    assert cli.main(arguments) == 0   # the new script invalidates the cached finding
    (tmp_path / "train.py").write_text("import jax\n\nfrom pkg.solver import solve\n")
    assert cli.main(arguments) == 1
    capsys.readouterr()


def test_strict_key_reuse_reports_deliberate_reuse_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "loader.py").write_text("import jax.random as jr\n\ndef loader(key, n):\n"
                                        "    order = jr.permutation(key, n)\n    return order, jr.split(key)\n")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--no-cache", "--select", "ODL704", "loader.py"]) == 0
    assert cli.main(["check", "--no-cache", "--select", "ODL704", "--config", "strict-key-reuse = true",
                     "loader.py"]) == 1
    (tmp_path / "pyproject.toml").write_text("[tool.odelint]\nstrict-key-reuse = true\n")
    assert cli.main(["check", "--select", "ODL704", "--cache-dir", str(tmp_path / "c"), "loader.py"]) == 1
    assert "`jr.split` gets the key `key`" in capsys.readouterr().out
