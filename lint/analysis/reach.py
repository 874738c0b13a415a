"""Which functions of a file a context reaches: from root functions (handed to a transform,
decorated by one, given to `lax.scan`), through the same-file functions they call or hand on,
methods they call on instances (`self.step(...)`, `model(x)` runs `__call__`), and functions
nested inside them. Shared by the traced and differentiated contexts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import libcst as cst
from odelint.analysis.calls import argument_for, positional_args
from odelint.analysis.classes import instance_class, method_of
from odelint.analysis.facts import Facts, function_wrappers
from odelint.analysis.scopes import CLASS, FUNCTION, LAMBDA, Binding, Scope, Site

if TYPE_CHECKING:
    Function = cst.FunctionDef | cst.Lambda


class Reach:
    """Root functions with a reason each; `spread` adds what they reach."""

    def __init__(self, facts: Facts, never_into: Iterable[str] = ()) -> None:
        self.facts = facts
        self.reasons: dict[int, str] = {}        # function -> why the context holds there
        self.root_reasons: dict[int, str] = {}   # function reached -> the root reason behind it
        self._never_into = frozenset(never_into)  # callees given these functions run elsewhere
        self._following: set[int] = set()         # parameters being followed to their callers
        self._passed: dict[int, tuple[Function, int, str | None] | None] = {}  # parameter -> the function passed

    def why(self, site: Site) -> str | None:
        """Why the context holds for code at `site` (or in a function around it), else None."""
        scope: Scope | None = site.scope
        while scope is not None:
            reason = self.reasons.get(id(scope.node))
            if reason is not None:
                return reason
            scope = scope.parent
        return None

    def add_root(self, function: Function, reason: str) -> None:
        self.reasons.setdefault(id(function), reason)
        self.root_reasons.setdefault(id(function), reason)

    def function(self, node: cst.BaseExpression, scope: Scope) -> tuple[Function, int] | None:
        """The same-file function a value calls, and how many leading parameters are already
        bound (by `functools.partial` or a bound method's `self`)."""
        found = self.function_via(node, scope)
        return (found[0], found[1]) if found is not None else None

    def function_via(self, node: cst.BaseExpression, scope: Scope) -> tuple[Function, int, str | None] | None:
        """`function`, and the parameter the function crossed to get here, for messages:
        `passed as `f` to `hessian`` for `f` in `def hessian(f): return jax.jacfwd(f)`."""
        kind = type(node)  # exact types: LibCST's classes are ABCs, whose isinstance is slow
        if kind is cst.Lambda:
            return cast(cst.Lambda, node), 0, None
        if kind is cst.Attribute:
            attribute = cast(cst.Attribute, node)
            cls = instance_class(self.facts, attribute.value, scope)
            method = method_of(self.facts, cls, attribute.attr.value) if cls is not None else None
            return (method, 1, None) if method is not None else None
        call = cast(cst.Call, node) if kind is cst.Call else None
        if call is not None and self.facts.qualname(call.func, scope) == "functools.partial":
            args = positional_args(call, before_star=True)
            inner = self.function_via(args[0].value, scope) if args else None
            return (inner[0], inner[1] + len(args) - 1, inner[2]) if inner else None
        function = self.facts.callee(node, scope)
        if function is None and kind is cst.Name:
            return self._passed_function(cast(cst.Name, node), scope)
        if (function is None and call is not None and call.args and call.args[0].keyword is None
                and self.facts.qualname(call.func, scope) in function_wrappers()):
            inner = self.function_via(call.args[0].value, scope)  # `jax.jit(f)` with `f` a parameter
            return inner if inner is not None and inner[1] == 0 else None
        return (function, 0, None) if function is not None else None

    def _passed_function(self, name: cst.Name, scope: Scope) -> tuple[Function, int, str | None] | None:
        """The one function every call of this file passes for a parameter: `f` in
        `def hessian(f): return jax.jacfwd(jax.jacrev(f))` after `hessian(final)`."""
        bindings = self.facts.lookup(name.value, scope)
        if len(bindings) != 1 or bindings[0].kind != "param" or not bindings[0].path:
            return None
        binding = bindings[0]
        if id(binding) in self._passed:
            return self._passed[id(binding)]
        owner = binding.scope.node
        if not isinstance(owner, cst.FunctionDef) or binding.scope.parent is None or id(binding) in self._following:
            return None
        self._following.add(id(binding))
        found = self._passed_for(binding, owner)
        self._following.discard(id(binding))
        if not self._following:  # an answer found while following another parameter may be provisional
            self._passed[id(binding)] = found
        return found

    def _passed_for(self, binding: Binding, owner: cst.FunctionDef) -> tuple[Function, int, str | None] | None:
        bound = 1 if binding.scope.parent is not None and binding.scope.parent.kind == CLASS else 0
        found: tuple[Function, int] | None = None
        for call, site in self.facts.calls_of(owner):
            argument = argument_for(call, binding, bound)
            passed = self.function(argument, site.scope) if argument is not None else None
            if passed is None or (found is not None and passed != found):
                return None  # a call passes something else, or two calls disagree
            found = passed
        return (*found, f"passed as `{binding.name}` to `{owner.name.value}`") if found is not None else None

    def spread(self) -> None:
        """Functions that code in the context calls or hands on are in the context too."""
        if not self.reasons:
            return
        pending = []
        for call, site in self.facts.part(CallTargets, CallTargets).calls:
            targets = self._targets(call, site)
            if targets:
                pending.append((site, targets))
        changed = True
        while changed:
            changed = False
            waiting = []
            for site, targets in pending:
                caller = enclosing_function(site.scope)
                if caller is None or self.why(site) is None:
                    waiting.append((site, targets))
                    continue
                for target in targets:
                    if id(target) not in self.reasons:
                        root = self.root_reasons.get(id(caller), self.why(site))
                        self.root_reasons[id(target)] = root  # type: ignore[assignment]
                        self.reasons[id(target)] = (f"{function_name(target)} is called from "
                                                    f"{function_name(caller)}; {root}")
                        changed = True
            pending = waiting

    def _targets(self, call: cst.Call, site: Site) -> list[Function]:
        """The functions a call in the context runs (its callee, a module's `__call__`) or hands
        on (unless the callee runs what it is given elsewhere: a host callback)."""
        found = self.facts.part(CallTargets, CallTargets).of(call)
        if found is None:
            return []
        called, handed_on, qualname = found
        return called + handed_on if handed_on and qualname not in self._never_into else called


class CallTargets:
    """For each call of the file that runs or hands on a function of the file: the functions it
    calls and those it passes as arguments. Found once per file and shared by every context
    (traced, differentiated, reverse mode, kernels), each of which spreads along them."""

    def __init__(self, facts: Facts) -> None:
        resolver = Reach(facts)
        self.calls: list[tuple[cst.Call, Site]] = []
        self._targets: dict[int, tuple[list[Function], list[Function], str | None]] = {}
        for call, site in facts.index.of_type(cst.Call):
            called: list[Function] = []
            callee = resolver.function(call.func, site.scope)
            if callee is not None:
                called.append(callee[0])
            cls = instance_class(facts, call.func, site.scope)
            method = method_of(facts, cls, "__call__") if cls is not None else None
            if method is not None:
                called.append(method)
            handed_on = []
            for arg in call.args:
                if type(arg.value) is cst.Name or type(arg.value) is cst.Attribute:
                    passed = resolver.function(arg.value, site.scope)
                    if passed is not None:
                        handed_on.append(passed[0])
            if called or handed_on:
                self.calls.append((call, site))
                qualname = facts.qualname(call.func, site.scope) if handed_on else None
                self._targets[id(call)] = (called, handed_on, qualname)

    def of(self, call: cst.Call) -> tuple[list[Function], list[Function], str | None] | None:
        """(functions called, functions handed on, the callee's qualified name), or None for a
        call that reaches no function of the file."""
        return self._targets.get(id(call))


def function_name(function: Function) -> str:
    return f"`{function.name.value}`" if isinstance(function, cst.FunctionDef) else "a lambda"


def enclosing_function(scope: Scope | None) -> Function | None:
    while scope is not None and scope.kind not in (FUNCTION, LAMBDA):
        scope = scope.parent
    return scope.node if scope is not None else None  # type: ignore[return-value]
