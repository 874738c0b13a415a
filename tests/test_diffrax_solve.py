"""Reading a `diffeqsolve` call's settings (rules/diffrax/common.py) with diffrax's defaults."""

from __future__ import annotations

import inspect

import libcst as cst
import pytest
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import build_scope_index
from odelint.rules.diffrax.common import Solve, api


def solves(source: str) -> list[Solve]:
    index = build_scope_index(cst.parse_module(source), {cst.Call})
    facts = Facts(index)
    return [solve for call, site in index.of_type(cst.Call) if (solve := Solve.of(facts, call, site)) is not None]


def test_absent_settings_are_diffrax_defaults() -> None:
    (solve,) = solves("import diffrax\ndiffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, y0)\n")
    assert (solve.adjoint().qualname, solve.adjoint().given) == ("diffrax.RecursiveCheckpointAdjoint", False)
    assert solve.controller().qualname == "diffrax.ConstantStepSize"
    assert solve.solver().qualname == "diffrax.Euler"
    assert solve.saves_steps() is None and solve.saves_dense() is None


def test_positional_keyword_and_named_values_through_aliases() -> None:
    source = ("import diffrax as dfx\nfrom diffrax import diffeqsolve as solve, Kvaerno5 as K\n"
              "pid = dfx.PIDController(rtol=1e-3, atol=1e-6)\nsolver = K(scan_kind='bounded')\n"
              "solve(term, solver, 0.0, 1.0, None, y0, stepsize_controller=pid, saveat=dfx.SaveAt(steps=3))\n"
              "dfx.diffeqsolve(terms=term, solver=dfx.Tsit5(), t0=0.0, t1=1.0, dt0=0.1, y0=y0, max_steps=None,\n"
              "                saveat=dfx.SaveAt(subs=[dfx.SubSaveAt(dense=True)]))\n")
    first, second = solves(source)
    assert first.solver().qualname == "diffrax.Kvaerno5"
    assert isinstance(first.solver().keyword("scan_kind"), cst.SimpleString)
    assert first.controller().qualname == "diffrax.PIDController" and first.controller().given
    assert first.is_none("dt0") and not first.is_none("max_steps")
    assert isinstance(first.saves_steps(), cst.Integer)
    assert second.solver().qualname == "diffrax.Tsit5"
    assert second.is_none("max_steps") and not second.is_none("dt0")
    assert second.saves_steps() is None and second.saves_dense() is not None


def test_unreadable_values_are_unknown_not_defaults() -> None:
    source = ("import diffrax\ndef run(adjoint, solver, *args):\n"
              "    diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, y0, adjoint=adjoint, "
              "saveat=diffrax.SaveAt(steps=False))\n"
              "    diffrax.diffeqsolve(*args)\n")
    first, second = solves(source)
    assert first.adjoint().qualname is None and first.adjoint().given
    assert first.solver().qualname is None
    assert first.saves_steps() is None
    assert second.argument("dt0") is None and not second.is_none("dt0")


def test_only_diffrax_diffeqsolve_is_read() -> None:
    assert solves("def diffeqsolve(*a):\n    pass\ndiffeqsolve(1, 2, 3, 4, None, 5)\n") == []


@pytest.mark.jax
def test_table_matches_the_installed_diffrax() -> None:
    """The solver lists are what diffrax itself says: every concrete implicit solver with
    the position of its `root_finder`, and the public stage-scanning ODE solvers."""
    diffrax = pytest.importorskip("diffrax")
    public = {f"diffrax.{name}": getattr(diffrax, name) for name in dir(diffrax)}
    solvers = {name: cls for name, cls in public.items() if isinstance(cls, type)
               and issubclass(cls, diffrax.AbstractSolver) and not inspect.isabstract(cls)
               and not name.startswith("diffrax.Abstract")}
    implicit = {name: list(inspect.signature(cls).parameters).index("root_finder")
                for name, cls in solvers.items() if issubclass(cls, diffrax.AbstractImplicitSolver)}
    assert api()["solvers"]["implicit"] == implicit
    for name in api()["solvers"]["staged"]:
        assert "scan_kind" in inspect.signature(solvers[name]).parameters, name
    defaults = inspect.signature(diffrax.diffeqsolve).parameters
    assert list(defaults)[:7] == api()["diffeqsolve"]["positional"]
    assert type(defaults["adjoint"].default) is public[api()["adjoints"]["default"]]
    assert type(defaults["stepsize_controller"].default) is public[api()["controllers"]["default"]]
