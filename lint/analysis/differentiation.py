"""Which code of a file may run under differentiation, and which values carry a tangent.

Shared by ODL301 (callbacks in differentiated code), ODL302 (differentiated `t0`/`t1`) and
the diffrax rules, which also ask in which modes (forward, reverse, nested) code is
differentiated: diffrax's default adjoint supports one reverse-mode pass only.
Roots are functions passed to or decorated by a grad-like transform, plus the methods of a
diffrax progress meter (diffrax calls them inside the solve, which may be differentiated).
From the roots, the same-file functions they call or pass on are differentiated too; code
nested inside a differentiated function is as well. The analysis is built once per file.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis import jax_api, literals
from odelint.analysis.calls import argument_for, keyword_arg, positional_args, text_of
from odelint.analysis.classes import enclosing_class
from odelint.analysis.definitions import Definition
from odelint.analysis.facts import Facts, loaded_names
from odelint.analysis.reach import CallTargets, Reach, function_name
from odelint.analysis.scopes import CLASS, FUNCTION, Binding, Scope, Site

# The transforms that differentiate, what they differentiate with respect to ("argnums":
# jax's `argnums`, default 0; "first": Equinox's filter_* transforms; "all": jvp/vjp/linearize
# primals) and in which modes, outermost first: all from lint/analysis/data/jax_api.toml.
FORWARD, REVERSE = "forward", "reverse"


def _differentiating() -> dict[str, jax_api.Transform]:
    return {name: row for name, row in jax_api.transforms().items() if row.differentiates}


def _modes(row: jax_api.Transform | None) -> tuple[str, ...]:
    return tuple(row.differentiates.split("+")) if row is not None and row.differentiates else ()


def callbacks() -> dict[str, int]:
    """Host callbacks without a JVP rule -> the index of their first forwarded argument."""
    return {name: row.first_arg for name, row in jax_api.callbacks().items() if not row.differentiable}


_MAX_NESTING = 4  # longer stacks of transforms are not tracked (keeps recursion finite)
PROGRESS_METER = "diffrax.AbstractProgressMeter"
STOP_GRADIENT = "jax.lax.stop_gradient"

if TYPE_CHECKING:
    Function = cst.FunctionDef | cst.Lambda


@dataclasses.dataclass(frozen=True)
class Root:
    """A function a transform differentiates: with respect to which positional parameters
    (None: all of them), and the transform's spelling for messages."""

    positions: frozenset[int] | None
    transform: str


class Differentiation(Reach):
    def __init__(self, facts: Facts) -> None:
        super().__init__(facts, never_into=jax_api.callbacks())
        self.roots: dict[int, Root] = {}
        self._differentiating = _differentiating()
        self._origins: dict[int, Binding | None] = {}
        self._stacks: dict[int, set[tuple[str, ...]]] | None = None  # function -> mode stacks
        self._find_transform_roots()
        self._find_progress_meters()
        self.spread()

    # -- which code is differentiated -----------------------------------------------------

    def why_differentiated(self, site: Site) -> str | None:
        """Why the code at `site` may run under differentiation, or None."""
        return self.why(site)

    def _mode(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        row = self._differentiating.get(self.facts.qualname(node, scope) or "")
        return row.wrt if row is not None else None

    def _find_transform_roots(self) -> None:
        for call, site in self.facts.calls_to(self._differentiating.keys()):
            mode = self._mode(call.func, site.scope)
            args = positional_args(call, before_star=True)
            if mode is not None and args:
                argnums = args[1].value if mode == "argnums" and len(args) > 1 else _argnums_given(call)
                self._add_root(args[0].value, site.scope, mode, argnums, call.func)
        for scope in list(self.facts.index.body_scopes.values()):
            if scope.kind == FUNCTION:
                for decorator in scope.node.decorators:  # type: ignore[attr-defined]
                    self._decorator_root(scope.node,  # type: ignore[arg-type]
                                         *self.facts.decorator_value(decorator.decorator, scope.parent or scope))

    def _decorator_root(self, function: cst.FunctionDef, decorator: cst.BaseExpression, scope: Scope) -> None:
        qualname = self.facts.qualname(decorator.func if isinstance(decorator, cst.Call) else decorator, scope)
        if isinstance(decorator, cst.Call) and qualname == "functools.partial":
            args = positional_args(decorator, before_star=True)
            if args:
                transform = args[0].value
                mode = self._mode(transform, scope)
                if mode is not None:
                    self._record(function, 0, mode, _argnums_given(decorator), transform)
            return
        row = self._differentiating.get(qualname or "")
        mode = row.wrt if row is not None else None
        if mode is not None:
            argnums = _argnums_given(decorator) if isinstance(decorator, cst.Call) else None
            self._record(function, 0, mode, argnums, decorator)

    def _add_root(self, target: cst.BaseExpression, scope: Scope, mode: str,
                  argnums: cst.BaseExpression | None, transform: cst.BaseExpression) -> None:
        resolved = self.function_via(target, scope)
        if resolved is not None:
            self._record(*resolved[:2], mode, argnums, transform, resolved[2])

    def _record(self, function: Function, offset: int, mode: str, argnums: cst.BaseExpression | None,
                transform: cst.BaseExpression, via: str | None = None) -> None:
        if mode == "all":
            positions = None
        elif mode == "first":
            positions = frozenset({offset})
        else:
            numbers = _argnums(argnums)
            positions = None if numbers is None else frozenset(n + offset for n in numbers)
        spelling = _spelling(transform.func if isinstance(transform, cst.Call) else transform)
        old = self.roots.get(id(function))
        if old is not None and old.positions is not None and positions is not None:
            positions = old.positions | positions
        elif old is not None:
            positions = None
        self.roots[id(function)] = Root(positions, spelling)
        passed = f", {via}," if via else ""  # `final`, passed as `f` to `hessian`, is differentiated by ...
        self.add_root(function, f"{function_name(function)}{passed} is differentiated by `{spelling}`")

    def _find_progress_meters(self) -> None:
        for scope in list(self.facts.index.body_scopes.values()):
            if scope.kind == CLASS and isinstance(scope.node, cst.ClassDef) and self._is_meter(scope.node, set()):
                for bindings in scope.bindings.values():
                    for binding in bindings:
                        if binding.kind == "def" and isinstance(binding.node, cst.FunctionDef):
                            self.add_root(
                                binding.node,
                                f"`{binding.name}` is a method of the diffrax progress meter "
                                f"`{scope.node.name.value}`")

    def _is_meter(self, cls: cst.ClassDef, seen: set[int]) -> bool:
        if id(cls) in seen:
            return False
        seen.add(id(cls))
        scope = self.facts.index.body_scope(cls)
        outer = scope.parent if scope is not None and scope.parent is not None else self.facts.index.module_scope
        for base in cls.bases:
            if self.facts.qualname(base.value, outer) == PROGRESS_METER:
                return True
            if isinstance(base.value, cst.Name):
                for binding in self.facts.lookup(base.value.value, outer):
                    if binding.kind == "class" and self._is_meter(binding.node, seen):  # type: ignore[arg-type]
                        return True
        return False

    # -- in which modes ---------------------------------------------------------------------

    def modes(self, site: Site) -> frozenset[tuple[str, ...]]:
        """The stacks of differentiation modes the code at `site` may run under, outermost
        transform first: `jax.grad(f)` gives f `("reverse",)`, `jax.hessian(f)` and
        `jax.jacfwd(jax.grad(f))` give `("forward", "reverse")`, a `jax.jvp` inside a
        function that `jax.grad` differentiates gives `("reverse", "forward")`. Empty when
        no transform of this file reaches the site."""
        if self._stacks is None:
            self._stacks = {}
            self._find_stacks()
        return frozenset(self._context(site.scope) - {()})

    def _context(self, scope: Scope | None, settled: bool = True) -> set[tuple[str, ...]]:
        """The stacks known so far at `scope`. Before the stacks are `settled`, a scope that is
        differentiated but has no stack yet gives none (rather than `{()}`, no transform), so
        that a stack still being found is not taken for no transform."""
        assert self._stacks is not None
        found: set[tuple[str, ...]] = set()
        differentiated = False
        while scope is not None:
            found |= self._stacks.get(id(scope.node), set())
            differentiated = differentiated or id(scope.node) in self.reasons
            scope = scope.parent
        return found or (set() if differentiated and not settled else {()})

    def _find_stacks(self) -> None:
        """Propagate stacks to a fixpoint; then once more with every scope still without a
        stack (a progress meter's methods, differentiated in no known mode) taken as none."""
        applications = self._applications()
        reaching = self.facts.part(CallTargets, CallTargets).calls
        calls = [(site, self._mode_targets(call, site)) for call, site in reaching]
        for settled in (False, True):
            changed = True
            while changed:
                changed = False
                for function, modes, scope in applications:
                    for outer in self._context(scope, settled):
                        changed |= self._add_stack(function, outer + modes)
                for site, targets in calls:
                    for outer in self._context(site.scope, settled) - {()}:
                        for target in targets:
                            changed |= self._add_stack(target, outer)

    def _add_stack(self, function: Function, stack: tuple[str, ...]) -> bool:
        assert self._stacks is not None
        stacks = self._stacks.setdefault(id(function), set())
        if len(stack) > _MAX_NESTING or stack in stacks:
            return False
        stacks.add(stack)
        return True

    def _applications(self) -> list[tuple[Function, tuple[str, ...], Scope | None]]:
        """(function, the modes a transform applies to it, the scope the transform runs in)."""
        found: list[tuple[Function, tuple[str, ...], Scope | None]] = []
        calls = self.facts.calls_to(self._differentiating.keys())
        inner = {id(args[0].value) for call, site in calls
                 if self._modes_of(call.func, site.scope) and (args := positional_args(call, before_star=True))}
        for call, site in calls:
            modes = self._modes_of(call.func, site.scope)
            args = positional_args(call, before_star=True)
            if modes and args and id(call) not in inner:
                wrapped, target = self._unwrap(args[0].value, site.scope, set())
                if target is not None:
                    found.append((target, modes + wrapped, site.scope))
        for scope in list(self.facts.index.body_scopes.values()):
            if scope.kind == FUNCTION and isinstance(scope.node, cst.FunctionDef):
                modes = tuple(mode for decorator in scope.node.decorators
                              for mode in self._decorator_modes(decorator.decorator, scope.parent))
                if modes:
                    found.append((scope.node, modes, scope.parent))
        return found

    def _modes_of(self, transform: cst.BaseExpression, scope: Scope) -> tuple[str, ...]:
        return _modes(self._differentiating.get(self.facts.qualname(transform, scope) or ""))

    def _decorator_modes(self, decorator: cst.BaseExpression, scope: Scope | None) -> tuple[str, ...]:
        if scope is None:
            return ()
        decorator, scope = self.facts.decorator_value(decorator, scope)
        if isinstance(decorator, cst.Call):
            if self.facts.qualname(decorator.func, scope) == "functools.partial":
                args = positional_args(decorator, before_star=True)
                return self._modes_of(args[0].value, scope) if args else ()
            return self._modes_of(decorator.func, scope)
        return self._modes_of(decorator, scope)

    def _unwrap(self, node: cst.BaseExpression, scope: Scope, seen: set[int]
                ) -> tuple[tuple[str, ...], Function | None]:
        """The modes of the transforms wrapped around a function value, and that function:
        `jax.grad(f)` and `g` after `g = jax.grad(f)` give `(("reverse",), f)`."""
        if isinstance(node, cst.Name) and id(node) not in seen:
            seen.add(id(node))
            bindings = self.facts.lookup(node.value, scope)
            if (len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path
                    and isinstance(bindings[0].value, cst.Call)
                    and self._modes_of(bindings[0].value.func, bindings[0].scope)):
                return self._unwrap(bindings[0].value, bindings[0].scope, seen)
        if isinstance(node, cst.Call):
            modes = self._modes_of(node.func, scope)
            args = positional_args(node, before_star=True)
            if modes and args:
                wrapped, target = self._unwrap(args[0].value, scope, seen)
                return modes + wrapped, target
        resolved = self.function(node, scope)
        return (), resolved[0] if resolved is not None else None

    def _mode_targets(self, call: cst.Call, site: Site) -> list[Function]:
        """Functions a call runs in the caller's modes; a transform's own application
        (`jax.grad(f)`, `jax.grad(f)(x)`) adds its modes in `_applications` instead."""
        for func in (call.func, call.func.func if isinstance(call.func, cst.Call) else None):
            if func is not None and self._modes_of(func, site.scope):
                return []
        return self._targets(call, site)

    # -- which values carry a tangent -----------------------------------------------------

    def differentiated_source(self, node: cst.BaseExpression, site: Site) -> Definition | None:
        """A differentiated parameter that the value of `node` at `site` depends on, or None."""
        found = self._source(node, site.scope)
        return Definition(found) if found is not None else None

    def root_of(self, parameter: Definition) -> Root | None:
        """How the function of a differentiated parameter is differentiated (its root)."""
        return self.roots.get(id(parameter.function))

    def _source(self, node: cst.BaseExpression, scope: Scope) -> Binding | None:
        for name in loaded_names(node):
            for binding in self.facts.lookup(name.value, scope):
                origin = self._origin(binding)
                if origin is not None:
                    return origin
        return None

    def _origin(self, binding: Binding) -> Binding | None:
        key = id(binding)
        if key not in self._origins:
            self._origins[key] = None  # cycle guard
            self._origins[key] = self._compute_origin(binding)
        return self._origins[key]

    def _compute_origin(self, binding: Binding) -> Binding | None:
        if binding.kind == "param":
            function = binding.scope.node
            root = self.roots.get(id(function))
            if root is not None and binding.path and (root.positions is None or binding.path[0] in root.positions):
                return binding
            if isinstance(function, cst.FunctionDef):
                bound = 1 if enclosing_class(binding.scope) is not None else 0
                for call, site in self.facts.calls_of(function):
                    argument = argument_for(call, binding, bound)
                    origin = self._source(argument, site.scope) if argument is not None else None
                    if origin is not None:
                        return origin
            return None
        if binding.kind == "assign" and binding.value is not None:
            value = binding.value
            for position in binding.path:
                if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements):
                    value = value.elements[position].value
            return self._source(value, binding.scope)
        return None


def differentiation(facts: Facts) -> Differentiation:
    """The analysis for this file, built once as a part of its facts and shared by the rules."""
    return facts.part(Differentiation, Differentiation)


def is_stop_gradient(facts: Facts, node: cst.BaseExpression, scope: Scope) -> bool:
    return isinstance(node, cst.Call) and facts.qualname(node.func, scope) == STOP_GRADIENT


def _argnums_given(call: cst.Call) -> cst.BaseExpression | None:
    given = keyword_arg(call, "argnums")
    return given.value if given is not None else None


def _argnums(node: cst.BaseExpression | None) -> frozenset[int] | None:
    """jax's `argnums`: default 0, an int or a tuple of ints; None when it is not a literal."""
    if node is None:
        return frozenset({0})
    return literals.integers(node)


def _spelling(node: cst.BaseExpression) -> str:
    return text_of(node)
