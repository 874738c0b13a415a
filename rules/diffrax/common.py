"""What the diffrax rules (ODL801-ODL805) share: the diffrax API table, and reading a
`diffeqsolve` call's settings (solver, controller, adjoint, saveat) with their defaults."""

from __future__ import annotations

import dataclasses
from typing import Any

import libcst as cst
from odelint.analysis import Facts, Site, argument_at, built_by, calls_within, jax_api, keyword_arg, literals


def api() -> dict[str, Any]:
    """diffrax_api.toml, read on first use."""
    return jax_api.diffrax_api()


DIFFEQSOLVE: str = api()["names"]["diffeqsolve"]
SAVEAT_CLASSES = frozenset(api()["names"]["saveat"])


@dataclasses.dataclass(frozen=True)
class Setting:
    """What a `diffeqsolve` argument is built from. `qualname` is the class called (the
    default class when the argument is absent), None when the value cannot be read;
    `call` is the constructor call, None for a default or an unreadable value."""

    qualname: str | None
    call: cst.Call | None
    given: bool
    site: Site | None = None    # where the names in `call` resolve
    via: str | None = None      # the parameter it crossed: "passed as `solver` to `integrate`"

    def origin(self) -> str:
        """` (passed as `solver` to `integrate`)` when the value crossed a call, else nothing."""
        return f" ({self.via})" if self.via else ""

    def keyword(self, name: str) -> cst.BaseExpression | None:
        arg = keyword_arg(self.call, name) if self.call is not None else None
        return arg.value if arg is not None else None


class Solve:
    """One `diffrax.diffeqsolve(...)` call and the settings it passes."""

    def __init__(self, facts: Facts, call: cst.Call, site: Site) -> None:
        self.facts, self.call, self.site = facts, call, site

    @classmethod
    def of(cls, facts: Facts, call: cst.Call, site: Site) -> Solve | None:
        return cls(facts, call, site) if facts.qualname(call.func, site.scope) == DIFFEQSOLVE else None

    def argument(self, name: str) -> cst.Arg | None:
        positional = api()["diffeqsolve"]["positional"]
        return argument_at(self.call, name, positional.index(name) if name in positional else None)

    def setting(self, name: str, default: str | None = None) -> Setting:
        arg = self.argument(name)
        if arg is None:
            return Setting(default, None, False)
        built = built_by(self.facts, arg.value, self.site)
        qualname = self.facts.qualname(built.call.func, built.site.scope) if built is not None else None
        if built is None or not qualname:
            return Setting(qualname, None, True, built.site if built else None)
        return Setting(qualname, built.call, True, built.site, built.via)

    def is_none(self, name: str) -> bool:
        """Is the argument passed as the literal `None`?"""
        arg = self.argument(name)
        return arg is not None and literals.is_none(arg.value)

    def adjoint(self) -> Setting:
        return self.setting("adjoint", api()["adjoints"]["default"])

    def controller(self) -> Setting:
        """The step-size controller; a wrapper (`ClipStepSizeController(PIDController(...))`)
        stands for the controller it wraps."""
        found = self.setting("stepsize_controller", api()["controllers"]["default"])
        wrappers: dict[str, int] = api()["controllers"]["wrappers"]
        seen = 0
        while found.call is not None and found.qualname in wrappers and found.site is not None and seen < 3:
            inner = argument_at(found.call, "controller", wrappers[found.qualname])
            built = built_by(self.facts, inner.value, found.site) if inner is not None else None
            qualname = self.facts.qualname(built.call.func, built.site.scope) if built is not None else None
            if built is None or not qualname:
                break
            found = Setting(qualname, built.call, True, built.site, found.via or built.via)
            seen += 1
        return found

    def solver(self) -> Setting:
        return self.setting("solver")

    def saves_steps(self) -> cst.BaseExpression | None:
        """The `steps=` value (`True` or a positive count) when `saveat` saves every step."""
        return self._saveat_flag("steps")

    def saves_dense(self) -> cst.BaseExpression | None:
        return self._saveat_flag("dense")

    def _saveat_flag(self, flag: str) -> cst.BaseExpression | None:
        saveat = self.setting("saveat")
        if saveat.call is None or saveat.qualname not in SAVEAT_CLASSES or saveat.site is None:
            return None
        for call in calls_within(saveat.call):
            if self.facts.qualname(call.func, saveat.site.scope) in SAVEAT_CLASSES:
                value = keyword_arg(call, flag)
                if value is not None and is_truthy_literal(value.value):
                    return value.value
        return None


def constructed(facts: Facts, node: cst.BaseExpression, site: Site) -> tuple[cst.Call, Site] | None:
    """The call that builds a value (odelint.analysis.built), and where its names resolve."""
    built = built_by(facts, node, site)
    return (built.call, built.site) if built is not None else None


def is_truthy_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Name):
        return node.value == "True"
    return bool(literals.integer(node))

