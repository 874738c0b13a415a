"""What calling a name runs under a compiling transform (`jax.jit`, `eqx.filter_jit`, pmap).

A call `g(x, [1, 2])` reaches a compiled function when `g` was built as `jax.jit(f, ...)`,
decorated with `@jax.jit`, `@jax.jit(...)` or `@partial(jax.jit, ...)`, or is spelled inline
as `jax.jit(f, ...)(x)`. Rules then read the transform's options (the call that carries
`static_argnums=...`) and which arguments of the call they make static.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis import literals
from odelint.analysis.calls import keyword_arg, positional_args, text_of
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import CLASS, Scope

# Transforms that compile the function and cache the compiled program on it: creating one
# anew (around a new function object) means tracing and compiling anew.
COMPILING = frozenset({"jax.jit", "jax.pmap", "equinox.filter_jit", "equinox.filter_pmap"})
STATIC_KEYWORDS = ("static_argnums", "static_argnames", "static_broadcasted_argnums")


@dataclasses.dataclass(frozen=True)
class Jitted:
    transform: str                           # its qualified name: "jax.jit", "equinox.filter_jit"
    spelling: str                            # as the file writes it, for messages
    options: cst.Call | None                 # the call carrying its keywords, if any
    function: cst.FunctionDef | cst.Lambda | None  # the compiled function, when it is of this file
    bound: int = 0                           # leading parameters already bound (a method's self)

    def static_keywords(self) -> dict[str, cst.BaseExpression]:
        """The keywords given that mark arguments static (`static_argnums=...`), by name."""
        if self.options is None:
            return {}
        given = (keyword_arg(self.options, name) for name in STATIC_KEYWORDS)
        return {arg.keyword.value: arg.value for arg in given if arg is not None and arg.keyword is not None}

    def static_arguments(self, call: cst.Call) -> list[cst.Arg]:
        """The arguments of `call` that `static_argnums`/`static_argnames` (literals) make static.
        jax.jit infers one from the other through the signature: a parameter named in
        `static_argnames` is static when passed by position, and one in `static_argnums` when
        passed by keyword."""
        keywords = self.static_keywords()
        positions = set(literals.integers(keywords.get("static_argnums")) or ())
        positions |= literals.integers(keywords.get("static_broadcasted_argnums")) or set()
        names = set(literals.strings(keywords.get("static_argnames")) or ())
        params = _positional_names(self.function)
        names |= {params[p + self.bound] for p in positions if 0 <= p + self.bound < len(params)}
        positions |= {params.index(name) - self.bound for name in names if name in params}
        found = []
        args = positional_args(call) or []
        for position, arg in enumerate(args):
            if position in positions or position - len(args) in positions:
                found.append(arg)
        found += [arg for arg in call.args if arg.keyword is not None and arg.keyword.value in names]
        return found


def jitted_callee(facts: Facts, func: cst.BaseExpression, scope: Scope) -> Jitted | None:
    """The compiled function that calling `func` runs, or None."""
    if type(func) is cst.Call:  # exact types: asked of every call, and an ABC's isinstance is slower
        return _wrapped(facts, func, scope)
    if type(func) is not cst.Name:
        return None
    bindings = facts.lookup(func.value, scope)
    if len(bindings) != 1:
        return None
    binding = bindings[0]
    if binding.kind == "assign" and not binding.path and isinstance(binding.value, cst.Call):
        return _wrapped(facts, binding.value, binding.scope)
    if binding.kind == "def":
        return decorated(facts, binding.node, binding.scope)  # type: ignore[arg-type]
    return None


def decorated(facts: Facts, function: cst.FunctionDef, scope: Scope) -> Jitted | None:
    """The compiling transform a `def` is decorated with, if any."""
    bound = 1 if scope.kind == CLASS else 0
    for decorator in function.decorators:
        node, where = facts.decorator_value(decorator.decorator, scope)
        options = node if isinstance(node, cst.Call) else None
        if options is not None and facts.qualname(options.func, where) == "functools.partial":
            args = positional_args(options, before_star=True)
            node = args[0].value if args else options
        elif options is not None:
            node = options.func
        qualname = facts.qualname(node, where)
        if qualname in COMPILING:
            return Jitted(qualname, _code(node), options, function, bound)
    return None


def _wrapped(facts: Facts, call: cst.Call, scope: Scope) -> Jitted | None:
    """`jax.jit(f, static_argnums=1)`: the transform and the function it wraps."""
    qualname = facts.qualname(call.func, scope)
    if qualname not in COMPILING:
        return None
    args = positional_args(call, before_star=True)
    target = args[0].value if args else None
    function = target if isinstance(target, cst.Lambda) else (
        facts.callee(target, scope) if target is not None else None)
    return Jitted(qualname, _code(call.func), call, function)


def _positional_names(function: cst.FunctionDef | cst.Lambda | None) -> list[str]:
    if function is None:
        return []
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params)]


def _code(node: cst.CSTNode) -> str:
    return text_of(node)
