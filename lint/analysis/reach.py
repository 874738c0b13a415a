"""Which functions of a file a context reaches: from root functions (handed to a transform,
decorated by one, given to `lax.scan`), through the same-file functions they call or hand on,
methods they call on instances (`self.step(...)`, `model(x)` runs `__call__`), and functions
nested inside them. Shared by the traced and differentiated contexts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import libcst as cst
from odelint.analysis import outline
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
        self._passed_read: dict[int, frozenset[int]] = {}  # parameter -> the functions whose calls decided it
        # When a set: the functions whose calls the answers since it was set read (CallTargets
        # keeps an answer across an edit only if the edit touched no call of those functions).
        self.read: set[int] | None = None

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
        owner = binding.scope.node
        if self.read is not None:
            self.read.add(id(owner))
        if id(binding) in self._passed:
            if self.read is not None:
                self.read |= self._passed_read[id(binding)]
            return self._passed[id(binding)]
        if not isinstance(owner, cst.FunctionDef) or binding.scope.parent is None or id(binding) in self._following:
            return None
        self._following.add(id(binding))
        outer, self.read = self.read, set()
        found = self._passed_for(binding, owner)
        inner, self.read = self.read, outer
        if self.read is not None:
            self.read |= inner
        self._following.discard(id(binding))
        if not self._following:  # an answer found while following another parameter may be provisional
            self._passed[id(binding)] = found
            self._passed_read[id(binding)] = frozenset(inner)
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


Targets = tuple[list["Function"], list["Function"], str | None]  # called, handed on, the callee's name


class CallTargets:
    """For each call of the file that runs or hands on a function of the file: the functions it
    calls and those it passes as arguments. Found once per file and shared by every context
    (traced, differentiated, reverse mode, kernels), each of which spreads along them.

    An editor's re-lint keeps the answers for calls outside the statements an edit replaced
    while those keep their outline (odelint.analysis.outline), unless an answer names a
    function of a replaced statement or read the calls of a function that the replaced
    statements call (a parameter's passed function: `f` in `def hessian(f)`). A call is
    outside them when its site is the one the last lint had: a replaced statement is walked
    anew, and the calls of its lines that an edit did not touch, still the same nodes
    (odelint.engine.line_splice), get new sites in new scopes."""

    def __init__(self, facts: Facts) -> None:
        self._facts = facts
        self._resolver = Reach(facts)
        self.calls: list[tuple[cst.Call, Site]] = []
        self._targets: dict[int, Targets] = {}
        calls = facts.index.of_type(cst.Call)
        carried = facts.carried(CallTargets)
        if carried is None:  # a file linted once
            for call, site in calls:
                self._add(call, site, self._answer(call, site, record=False)[1])
            return
        module = facts.index.module
        shapes = outline.outlines(facts.index, module, carried.setdefault("known", {}))
        last = carried.get("answers")
        if last is not None and outline.replaced(carried["body"], carried["outlines"], module, shapes) is None:
            last = None
        sites = carried.get("sites", {})
        answers: dict[int, tuple[cst.Call, Targets | None, frozenset[int]]] = {}
        touched: set[int] = set()  # the functions that calls of the replaced statements call
        if last is not None:
            present = {id(call) for call, site in calls if sites.get(id(call)) is site}  # a kept call's id is its own
            touched.update(id(function) for key, (_, found, _) in last.items()
                           if found is not None and key not in present for function in found[0])
        for call, site in calls:
            kept = last.get(id(call)) if last is not None else None
            if kept is None or kept[0] is not call or sites.get(id(call)) is not site:
                answers[id(call)] = self._answer(call, site)
                if answers[id(call)][1] is not None:
                    touched.update(id(function) for function in answers[id(call)][1][0])  # type: ignore[index]
        for call, site in calls:
            if id(call) in answers:
                continue
            kept = last[id(call)]  # type: ignore[index]
            answers[id(call)] = kept if self._still_right(kept, touched) else self._answer(call, site)
        for call, site in calls:
            self._add(call, site, answers[id(call)][1])
        carried.update(answers=answers, body=tuple(module.body), outlines=shapes,
                       sites={id(call): site for call, site in calls})

    def _add(self, call: cst.Call, site: Site, found: Targets | None) -> None:
        if found is not None:
            self.calls.append((call, site))
            self._targets[id(call)] = found

    def _answer(self, call: cst.Call, site: Site,
                record: bool = True) -> tuple[cst.Call, Targets | None, frozenset[int]]:
        """The call's targets (None: it reaches no function of the file), and the functions whose
        calls the answer read (when recorded)."""
        facts, resolver = self._facts, self._resolver
        resolver.read = set() if record else None
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
        read, resolver.read = frozenset(resolver.read or ()), None
        if not called and not handed_on:
            return call, None, read
        qualname = facts.qualname(call.func, site.scope) if handed_on else None
        return call, (called, handed_on, qualname), read

    def _still_right(self, kept: tuple[cst.Call, Targets | None, frozenset[int]], touched: set[int]) -> bool:
        """Is a kept answer for an unchanged call right in the new tree?"""
        _, found, read = kept
        if read and not read.isdisjoint(touched):
            return False
        scopes = self._facts.index.body_scopes
        return found is None or all((scope := scopes.get(id(function))) is not None and scope.node is function
                                    for function in (*found[0], *found[1]))

    def of(self, call: cst.Call) -> Targets | None:
        """(functions called, functions handed on, the callee's qualified name), or None for a
        call that reaches no function of the file."""
        return self._targets.get(id(call))


def function_name(function: Function) -> str:
    return f"`{function.name.value}`" if isinstance(function, cst.FunctionDef) else "a lambda"


def enclosing_function(scope: Scope | None) -> Function | None:
    while scope is not None and scope.kind not in (FUNCTION, LAMBDA):
        scope = scope.parent
    return scope.node if scope is not None else None  # type: ignore[return-value]
