"""Code that never runs under reverse-mode differentiation, whatever calls it.

Two shapes found in real libraries: a Pallas kernel (a function handed to `pallas_call`,
and what it calls): kernels are not reverse-differentiated (a `custom_vjp` supplies separate
backward kernels); and a function whose every call in the file has its result wrapped in
`lax.stop_gradient` (`dt0 = lax.stop_gradient(_select_initial_step(...))`, or the result
assigned and then `dt0 = lax.stop_gradient(dt0)` in the same function), so no cotangent
ever reaches it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis.calls import argument_at
from odelint.analysis.facts import Facts
from odelint.analysis.reach import Reach, function_name
from odelint.analysis.scopes import FUNCTION, Scope, Site

if TYPE_CHECKING:
    from odelint.analysis.reach import Function

_KERNEL_CALLS = frozenset({"jax.experimental.pallas.pallas_call"})
_STOP_GRADIENT = "jax.lax.stop_gradient"


class Undifferentiated:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._kernels = Reach(facts)
        self._stopped: dict[int, set[str]] = {}  # scope -> names passed to stop_gradient there
        self._wrapped: set[int] = set()          # calls whose result stop_gradient receives directly
        for call, site in facts.calls_to(_KERNEL_CALLS | {_STOP_GRADIENT}):
            qualname = facts.qualname(call.func, site.scope)
            if qualname in _KERNEL_CALLS:
                kernel = argument_at(call, "kernel", 0) or argument_at(call, "f", 0)
                for function in self._functions(kernel.value, site.scope) if kernel is not None else ():
                    self._kernels.add_root(function, f"{function_name(function)} is a Pallas kernel")
            elif qualname == _STOP_GRADIENT and call.args:
                value = call.args[0].value
                if isinstance(value, cst.Name):
                    self._stopped.setdefault(id(site.scope), set()).add(value.value)
                elif isinstance(value, cst.Call):
                    self._wrapped.add(id(value))
        self._kernels.spread()
        if not self._kernels.reasons:
            return  # no kernel in the file: no call runs inside one
        # `kernel = one_step if ... else many_steps; kernel(...)` inside a kernel: both run there
        for call, site in facts.index.of_type(cst.Call):
            why = self._kernels.why(site)
            if why is not None and isinstance(call.func, cst.Name):
                for function in self._functions(call.func, site.scope):
                    self._kernels.reasons.setdefault(id(function), f"{function_name(function)} is called from {why}")
        self._kernels.spread()

    def _functions(self, node: cst.BaseExpression, scope: Scope) -> list[Function]:
        """The same-file functions a value may be: itself, or each function that a name assigned
        in several places (`kernel = a` / `kernel = b`, `kernel = partial(f, ...)`) holds."""
        found = self._kernels.function(node, scope)
        if found is not None:
            return [found[0]]
        if not isinstance(node, cst.Name):
            return []
        functions = []
        for binding in self.facts.lookup(node.value, scope):
            if binding.kind == "assign" and not binding.path and binding.value is not None:
                value = self._kernels.function(binding.value, binding.scope)
                if value is not None:
                    functions.append(value[0])
        return functions

    def why_not(self, site: Site) -> str | None:
        """Why the code at `site` is never reverse-differentiated, else None."""
        kernel = self._kernels.why(site)
        if kernel is not None:
            return kernel
        scope: Scope | None = site.scope
        while scope is not None and scope.kind != FUNCTION:
            scope = scope.parent
        if scope is None or not isinstance(scope.node, cst.FunctionDef):
            return None
        calls = self.facts.calls_of(scope.node)
        if calls and all(self._result_stopped(call, caller) for call, caller in calls):
            return f"every caller of `{scope.node.name.value}` applies `lax.stop_gradient` to its result"
        return None

    def _result_stopped(self, call: cst.Call, site: Site) -> bool:
        if id(call) in self._wrapped:
            return True
        stopped = self._stopped.get(id(site.scope), set())
        names = [binding.name for bindings in site.scope.bindings.values() for binding in bindings
                 if binding.kind == "assign" and binding.value is call and not binding.path]
        return bool(names) and all(name in stopped for name in names)


def never_differentiated(facts: Facts, site: Site) -> str | None:
    """Why the code at `site` is never reverse-differentiated (a Pallas kernel, a function
    whose results are always under `lax.stop_gradient`), else None. Built once as a part of
    the file's facts (a module-level cache keyed by them kept every lint's model alive: the
    value refers to its key)."""
    return facts.part(Undifferentiated, Undifferentiated).why_not(site)
