"""Module classes of the project's other files, however the linted file reaches them: by name
(`from models import MLP`), through a module attribute (`import models; models.MLP(...)`,
`from . import models`, `import pkg.models as models`), through a package that re-exports
(`from .mlp import MLP` or `from .mlp import *` in its `__init__`), or a star import."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import Site, build_scope_index
from odelint.engine.core import lint_source

MLP = """
import equinox as eqx
import jax


class MLP(eqx.Module):
    layer: eqx.nn.Linear
    act: object

    def __init__(self, key):
        self.layer = eqx.nn.Linear(2, 2, key=key)
        self.act = jax.nn.relu

    def __call__(self, x):
        return self.act(self.layer(x))


class Plain:
    pass
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """pyproject.toml, models.py beside the linted file, a package `pkg` with `models.py`, a
    package `nets` whose `__init__` re-exports by name and `stars` which re-exports with `*`."""
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "models.py").write_text(MLP)
    for package, init in (("pkg", ""), ("nets", "from .mlp import MLP, Plain\n"), ("stars", "from .mlp import *\n")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text(init)
        (tmp_path / package / ("models.py" if package == "pkg" else "mlp.py")).write_text(MLP)
    return tmp_path


def _facts(path: Path, source: str) -> tuple[Facts, Site]:
    path.write_text(source)
    index = build_scope_index(cst.parse_module(source), {cst.Call})
    return Facts(index, str(path)), Site(index.module_scope, 10**9)


@pytest.mark.parametrize("imports, built", [
    ("from models import MLP", "MLP"),
    ("import models", "models.MLP"),
    ("import models as m", "m.MLP"),
    ("from pkg import models", "models.MLP"),
    ("import pkg.models", "pkg.models.MLP"),
    ("import pkg.models as models", "models.MLP"),
    ("import nets", "nets.MLP"),
    ("from nets import mlp", "mlp.MLP"),
    ("import stars", "stars.MLP"),
    ("from models import *", "MLP"),
    ("from stars import *", "MLP"),
])
def test_a_project_class_however_it_is_reached(project: Path, imports: str, built: str) -> None:
    source = f"{imports}\n\nmodel = {built}(None)\nplain = {built[:-3]}Plain()\n"
    facts, end = _facts(project / "train.py", source)
    found = facts.module_class(cst.Name("model"), end)
    assert found is not None and found.name == "MLP" and found.facts is not None
    assert facts.kind(cst.Name("model"), end) is Kind.MODULE
    leaves = [leaf.describe("model") for leaf in facts.non_array_leaves(found)]
    assert leaves == ["`model.act` is a function (`jax.nn.relu`)"]
    assert facts.kind(cst.Name("plain"), end) is not Kind.MODULE


def test_relative_imports_inside_a_package(project: Path) -> None:
    facts, end = _facts(project / "pkg" / "train.py", "from . import models\nfrom .models import *\n\n"
                                                        "a = models.MLP(None)\nb = MLP(None)\n")
    for name in ("a", "b"):
        found = facts.module_class(cst.Name(name), end)
        assert found is not None and found.name == "MLP"
        assert found.defined_in(str(project / "pkg" / "train.py")) == "models.py"
        assert found.defined_in(str(project / "train.py")) == "pkg/models.py"
        assert found.defined_in(str(project / "pkg" / "models.py")) is None  # its own file


def test_what_is_not_a_project_class(project: Path) -> None:
    """A name no star-imported file defines stays unknown; a library star import is not read;
    without the linted file's path no other file is."""
    facts, end = _facts(project / "train.py", "from models import *\nfrom jax.numpy import *\n\n"
                                              "a = Missing(None)\nb = zeros(3)\nc = MLP(None)\n")
    assert facts.module_class(cst.Name("a"), end) is None
    assert facts.qualname(cst.Name("zeros"), end.scope) is None
    assert facts.qualname(cst.Name("MLP"), end.scope) == "models.MLP"
    index = build_scope_index(cst.parse_module("import models\nc = models.MLP(None)\n"), {cst.Call})
    assert Facts(index).module_class(cst.Name("c"), Site(index.module_scope, 10**9)) is None


def test_a_star_import_gives_what_all_lists_or_the_public_names(project: Path) -> None:
    (project / "listed.py").write_text(MLP + "\n__all__ = ['Plain']\n")
    (project / "private.py").write_text(MLP.replace("MLP", "_MLP"))
    facts, end = _facts(project / "train.py", "from listed import *\nfrom private import *\n\n"
                                              "a = MLP(None)\nb = _MLP(None)\nc = Plain()\n")
    assert facts.qualname(cst.Name("MLP"), end.scope) is None
    assert facts.qualname(cst.Name("_MLP"), end.scope) is None
    assert facts.qualname(cst.Name("Plain"), end.scope) == "listed.Plain"


def test_star_imports_that_import_each_other_end(project: Path) -> None:
    (project / "a.py").write_text("from b import *\n")
    (project / "b.py").write_text("from a import *\n")
    facts, end = _facts(project / "train.py", "from a import *\n\nx = Anything(None)\n")
    assert facts.module_class(cst.Name("x"), end) is None


TRAIN = """
import jax
import optax

{imports}


def loss(model, x):
    return model(x).sum()


model = {built}(jax.random.PRNGKey(0))
optim = optax.adam(1e-3)
opt_state = optim.init(model)
jax.jit(loss)(model, 1.0)
"""


@pytest.mark.parametrize("imports, built", [("import models", "models.MLP"), ("from stars import *", "MLP")])
def test_rules_flag_a_project_module_reached_through_a_module_or_a_star(project: Path, imports: str,
                                                                        built: str) -> None:
    """ODL201 and ODL601 on the module, with the gate and without (it must miss nothing)."""
    path = project / "train.py"
    source = textwrap.dedent(TRAIN.format(imports=imports, built=built))
    path.write_text(source)
    for gate in (True, False):
        result = lint_source(source, str(path), {"ODL201", "ODL601"}, gate=gate)
        assert sorted((f.code, f.span.line) for f in result.findings) == [("ODL201", 14), ("ODL601", 15)]
    # the messages say which file the class crossed from
    where = "models.py" if imports == "import models" else "stars/mlp.py"
    messages = {f.code: f.message for f in result.findings}
    assert f"`model.act` is a function (`jax.nn.relu`), in the class `MLP` of `{where}`;" in messages["ODL201"]
    assert f"gets an Equinox module (`MLP`, defined in `{where}`) for parameter `model`" in messages["ODL601"]


def test_rules_on_modules_gate_files_that_never_name_equinox(project: Path) -> None:
    """A module of another project file is mutated, or given to `lax.scan` as its function, in
    a file that names no library of modules: the text triggers let it through (ODL604, ODL401)."""
    path = project / "train.py"
    source = textwrap.dedent("""
        import jax
        import jax.numpy as jnp

        import models

        model = models.MLP(jax.random.PRNGKey(0))
        model.act = jax.nn.gelu
        carry, ys = jax.lax.scan(model, jnp.zeros(2), jnp.ones((3, 2)))
    """)
    path.write_text(source)
    for gate in (True, False):
        result = lint_source(source, str(path), {"ODL604", "ODL401"}, gate=gate)
        assert sorted((f.code, f.span.line) for f in result.findings) == [("ODL401", 9), ("ODL604", 8)]


def test_the_gate_parses_a_module_of_a_project_base_only_when_odl604_may_report(project: Path) -> None:
    """A subclass of a project file's module that sets the fields it declares in `__init__`
    (distreqx's bijectors) gives ODL604 nothing to say: the Sketch keeps LibCST off the file;
    an undeclared field, or a field set in another method, opens it, and the rule reports."""
    (project / "base.py").write_text("import equinox as eqx\n\nclass Base(eqx.Module):\n    pass\n")
    declared = textwrap.dedent("""
        import jax.numpy as jnp

        from base import Base

        class Shift(Base):
            shift: jnp.ndarray
            count: int

            def __init__(self, shift):
                self.shift = shift
                self.count = 0
                self.count += 1
    """)
    path = project / "shift.py"
    result = lint_source(declared, str(path), {"ODL604"})
    assert result.findings == [] and not result.parsed
    grown = declared + "\n    def grow(self):\n        self.count = 2\n"
    for changed, line in ((declared.replace("    count: int\n", ""), 11), (grown, 16)):
        for gate in (True, False):
            result = lint_source(changed, str(path), {"ODL604"}, gate=gate)
            assert [(f.code, f.span.line) for f in result.findings] == [("ODL604", line)] and result.parsed
