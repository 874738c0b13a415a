"""Where code runs on abstract tracers, and which values there are traced.

Code is traced inside a function handed to (or decorated by) a tracing transform
(`jax.jit`, `jax.vmap`, `eqx.filter_jit`, `jax.checkpoint`, ... from lint/analysis/data/jax_api.toml),
a function given to `lax.scan`/`while_loop`/`fori_loop`/`cond`/`switch` or to a diffrax
term, and everything those call or nest (`Reach`). There, Python `if`, `bool()`, `print` and
`hash` see tracers, not numbers.

A value is traced when it derives from a traced parameter: a parameter of a traced root that
the transform does not make static (`static_argnums`/`static_argnames`; for Equinox's
filter_* transforms only arrays are traced), or a parameter of a reached function that traced
code passes a traced value for. `x.shape`, `len(x)`, `x is None` are static even then.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis import jax_api, literals
from odelint.analysis.calls import argument_at, argument_for, keyword_arg, positional_args, splatted_for, text_of
from odelint.analysis.definitions import Definition
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.reach import Reach, function_name
from odelint.analysis.scopes import CLASS, FUNCTION, Binding, Scope, Site, children_of

if TYPE_CHECKING:
    from odelint.analysis.reach import Function


@dataclasses.dataclass(frozen=True)
class Traced:
    """A traced value's origin: the parameter it derives from, why that is traced, and the
    parameter it crossed to reach the code that reads it ("passed as `y` to `helper`")."""

    parameter: Definition = dataclasses.field(repr=False)
    reason: str
    via: str | None = None

    def describe(self) -> str:
        return f"`{self.parameter.name}` ({self.reason}){self.passed()}"

    def passed(self) -> str:
        """`, passed as `y` to `helper`` when the value crossed a call, else nothing."""
        return f", {self.via}" if self.via else ""


@dataclasses.dataclass(frozen=True)
class _Root:
    spelling: str                          # `jax.jit`, `lax.scan`: for messages
    transform: jax_api.Transform | None    # None for a traced body (lax.scan's f, a vector field)
    offset: int                            # leading parameters bound (partial, a method's self)
    static_positions: frozenset[int] | None = frozenset()  # None: not a literal, unknown
    static_names: frozenset[str] = frozenset()
    params: tuple[int, ...] | None = None  # traced bodies: which parameters are traced
    unmapped: frozenset[int] = frozenset()  # vmap's in_axes=None positions
    via: str | None = None                  # the parameter the function crossed: "passed as `f` to `compile`"


class Tracing(Reach):
    def __init__(self, facts: Facts) -> None:
        super().__init__(facts, never_into=jax_api.callbacks())
        self._roots: dict[int, _Root] = {}
        self._repeated: set[int] = set()  # functions a traced body runs more than once per call (scan, while)
        self._branches: set[int] = set()  # functions a `lax.cond`/`lax.switch` runs as a branch
        self._origins: dict[int, Traced | None] = {}
        self._find_call_roots()
        self._find_decorator_roots()
        self.spread()

    # -- which code is traced ------------------------------------------------------------

    def traced_by(self, site: Site) -> str | None:
        """Why code at `site` runs on tracers (`step` is traced by `jax.jit`), else None."""
        return self.why(site)

    def branch_scope(self, site: Site) -> Scope | None:
        """The function around `site` that is traced only as a `lax.cond`/`lax.switch` branch,
        which runs once per call of the code around it, else None. A key that the branch
        closes over from its enclosing function is then as fresh as that call's."""
        scope: Scope | None = site.scope
        while scope is not None:
            root = self._roots.get(id(scope.node))
            if root is not None:
                key = id(scope.node)
                return scope if root.transform is None and key in self._branches and key not in self._repeated else None
            scope = scope.parent
        return None

    def _find_call_roots(self) -> None:
        for call, site in self.facts.calls_to(jax_api.tracing_calls()):
            qualname = self.facts.qualname(call.func, site.scope)
            transform = jax_api.transform(qualname)
            if transform is not None and transform.traces:
                target = argument_at(call, "fun", 0) or argument_at(call, "f", 0)
                if target is not None:
                    self._add(target.value, site.scope, call.func, transform, call)
                continue
            body = jax_api.traced_body(qualname)
            if body is not None:
                for function in _body_functions(call, body):
                    self._add(function, site.scope, call.func, None, None, body.params)
                    resolved = self.function(function, site.scope)
                    if resolved is not None:
                        (self._branches if body.once else self._repeated).add(id(resolved[0]))

    def _find_decorator_roots(self) -> None:
        for scope in list(self.facts.index.body_scopes.values()):
            if scope.kind != FUNCTION:
                continue
            function: cst.FunctionDef = scope.node  # type: ignore[assignment]
            offset = 1 if scope.parent is not None and scope.parent.kind == CLASS else 0
            for decorator in function.decorators:
                found = self._decorator_transform(*self.facts.decorator_value(decorator.decorator,
                                                                               scope.parent or scope))
                if found is not None:
                    transform, spelled, options = found
                    self._record(function, offset, spelled, transform, options)

    def _decorator_transform(self, node: cst.BaseExpression, scope: Scope):
        qualname = self.facts.qualname(node.func if isinstance(node, cst.Call) else node, scope)
        if isinstance(node, cst.Call) and qualname == "functools.partial":
            args = positional_args(node, before_star=True)
            inner = jax_api.transform(self.facts.qualname(args[0].value, scope)) if args else None
            return (inner, args[0].value, node) if inner is not None and inner.traces else None
        transform = jax_api.transform(qualname)
        if transform is None or not transform.traces:
            return None
        if isinstance(node, cst.Call):  # @eqx.filter_jit(donate="all"), @jax.jit(...) (0.4.x style)
            return transform, node.func, node
        return transform, node, None

    def _add(self, target: cst.BaseExpression, scope: Scope, spelled: cst.BaseExpression,
             transform: jax_api.Transform | None, options: cst.Call | None,
             params: tuple[int, ...] | None = None) -> None:
        resolved = self.function_via(target, scope)
        if resolved is not None:
            self._record(resolved[0], resolved[1], spelled, transform, options, params, resolved[2])

    def _record(self, function: Function, offset: int, spelled: cst.BaseExpression,
                transform: jax_api.Transform | None, options: cst.Call | None,
                params: tuple[int, ...] | None = None, via: str | None = None) -> None:
        spelling = text_of(spelled)
        static_positions: frozenset[int] | None = frozenset()
        static_names: frozenset[str] = frozenset()
        unmapped: frozenset[int] = frozenset()
        if transform is not None and options is not None:
            for keyword in transform.static:
                given = keyword_arg(options, keyword)
                if given is None:
                    continue
                if keyword.endswith("argnames"):
                    static_names = literals.strings(given.value) or frozenset()
                else:
                    signature = function.params
                    count = len(signature.posonly_params) + len(signature.params) - offset
                    static_positions = literals.positions(given.value, count)
            in_axes = keyword_arg(options, "in_axes")
            if in_axes is not None and isinstance(in_axes.value, (cst.Tuple, cst.List)):
                unmapped = frozenset(i for i, e in enumerate(in_axes.value.elements)
                                     if isinstance(e.value, cst.Name) and e.value.value == "None")
        self._roots.setdefault(id(function), _Root(spelling, transform, offset, static_positions, static_names,
                                                   params, unmapped, via))
        passed = f", {via}," if via else ""  # `g`, passed as `f` to `compile`, is traced by ...
        self.add_root(function, f"{function_name(function)}{passed} is traced by `{spelling}`")

    # -- which values are traced -----------------------------------------------------------

    def traced_value(self, node: cst.BaseExpression, site: Site) -> Traced | None:
        """The traced parameter the value of `node` at `site` derives from, or None."""
        if self.why(site) is None:
            return None
        return self._value_origin(node, site.scope)

    def _value_origin(self, node: cst.BaseExpression, scope: Scope) -> Traced | None:
        for name in dynamic_names(self.facts, node, scope):
            for binding in self.facts.lookup(name.value, scope):
                origin = self._origin(binding)
                if origin is not None:
                    return origin
        return None

    def _origin(self, binding: Binding) -> Traced | None:
        key = id(binding)
        if key not in self._origins:
            self._origins[key] = None  # cycle guard
            self._origins[key] = self._compute_origin(binding)
        return self._origins[key]

    def _compute_origin(self, binding: Binding) -> Traced | None:
        if binding.kind == "param":
            return self._parameter_origin(binding)
        if binding.kind == "assign" and binding.value is not None:
            value = binding.value
            for position in binding.path:
                if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements):
                    value = value.elements[position].value
            return self._value_origin(value, binding.scope)
        return None

    def _parameter_origin(self, binding: Binding) -> Traced | None:
        function = binding.scope.node
        root = self._roots.get(id(function))
        if root is not None and self._root_traces(root, binding):
            owner = function_name(function)  # type: ignore[arg-type]
            passed = f" ({root.via})" if root.via else ""
            return Traced(Definition(binding), f"a parameter of {owner}{passed}, traced by `{root.spelling}`")
        if isinstance(function, cst.FunctionDef) and id(function) in self.reasons:
            bound = 1 if binding.scope.parent is not None and binding.scope.parent.kind == CLASS else 0
            for call, site in self.facts.calls_of(function):
                if self.why(site) is None:
                    continue
                argument = argument_for(call, binding, bound)
                for candidate in [argument] if argument is not None else splatted_for(call, binding, bound):
                    origin = self._value_origin(candidate, site.scope)
                    if origin is not None:
                        return dataclasses.replace(origin, via=f"passed as `{binding.name}` to `{function.name.value}`")
        return None

    def _root_traces(self, root: _Root, binding: Binding) -> bool:
        param: cst.Param = binding.node  # type: ignore[assignment]
        if not binding.path:
            return False  # keyword-only: jit traces them too, but only when passed; unknown here
        position = binding.path[0] - root.offset
        if position < 0 or param.default is not None:
            return False
        if root.transform is None:
            return root.params is None or position in root.params
        if root.transform.filtered:
            return self.facts.binding_kind(binding) in (Kind.ARRAY, Kind.KEY)
        if root.static_positions is None or position in root.static_positions or binding.name in root.static_names:
            return False
        return position not in root.unmapped


def dynamic_names(facts: Facts, node: cst.CSTNode, scope: Scope) -> list[cst.Name]:
    """Names whose traced-ness reaches the value of `node`: `x.shape`, `len(x)`,
    `isinstance(x, T)` and `x is None` do not pass it on; lambdas are not entered."""
    found: list[cst.Name] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            found.append(current)
        elif isinstance(current, cst.Attribute):
            if not jax_api.static_attribute(current.attr.value):
                stack.append(current.value)
        elif isinstance(current, cst.Call):
            if not jax_api.static_function(facts.qualname(current.func, scope) or _builtin(current.func)):
                stack.extend(arg.value for arg in current.args)
                if not isinstance(current.func, cst.Name):
                    stack.append(current.func)
        elif isinstance(current, cst.Comparison):
            if not all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in current.comparisons):
                stack.append(current.left)
                stack.extend(t.comparator for t in current.comparisons)
        elif isinstance(current, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            continue
        elif isinstance(current, cst.Arg):
            stack.append(current.value)
        else:
            stack.extend(children_of(current))
    return found


def _builtin(func: cst.BaseExpression) -> str | None:
    return func.value if isinstance(func, cst.Name) else None


def _body_functions(call: cst.Call, body: jax_api.TracedBody) -> list[cst.BaseExpression]:
    found = []
    for index, position in enumerate(body.functions):
        keyword = body.keywords[index] if index < len(body.keywords) else None
        arg = argument_at(call, keyword, position)
        if arg is not None:
            found.append(arg.value)
    for index, position in enumerate(body.lists):
        at = len(body.functions) + index
        keyword = body.keywords[at] if at < len(body.keywords) else None
        arg = argument_at(call, keyword, position)
        if arg is not None and isinstance(arg.value, (cst.List, cst.Tuple)):
            found.extend(element.value for element in arg.value.elements)
    return found
