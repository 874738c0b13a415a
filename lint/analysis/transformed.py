"""Function transforms applied to this file's functions, and what the transformed result is called with.

`jax.jit(loss)(model, x)`, `step = jax.jit(step)` then `step(model, x)`, `@jax.jit def step`,
`@functools.partial(jax.jit, static_argnums=1)`, `jax.grad(functools.partial(loss, x=x))`:
each is one `Application` of a transform to a function. Rules ask `Facts` for them
(`facts.transform_applied(call, site)`, `facts.transforms_decorating(function, site)`), which
parameters the transform traces or differentiates (`application.consumes(parameter)`), the
calls of the transformed result (`facts.transformed_calls`) and which Equinox module class
reaches a parameter (`facts.module_received`), from its annotation or from those calls.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis import jax_api, literals
from odelint.analysis.calls import argument_at, argument_for, keyword_arg, positional_args
from odelint.analysis.definitions import Definition, record_of
from odelint.analysis.facts import Facts, ModuleClass
from odelint.analysis.reach import Reach
from odelint.analysis.scopes import CLASS, Binding, Site

if TYPE_CHECKING:
    from odelint.analysis.reach import Function


@dataclasses.dataclass(frozen=True, eq=False)
class Application:
    """A transform applied to a same-file function."""

    qualname: str                      # `jax.jit`
    transform: jax_api.Transform
    spelled: cst.BaseExpression        # the transform as the file writes it: `jax.jit`, `jit`
    node: cst.BaseExpression           # the call `jax.jit(f, ...)`, or the decorator expression
    options: cst.Call | None           # the call whose keywords configure the transform
    function: Function
    offset: int                        # leading parameters already bound (partial, a method's self)
    bound_names: frozenset[str]        # parameters a `functools.partial` binds by keyword
    site: Site                         # where the transform is applied
    # the function's positional parameters that a call of the transformed result fills
    parameters: tuple[Definition, ...] = ()
    decorator: bool = False

    @property
    def keywords(self) -> tuple[str, ...]:
        """The keywords given to the transform itself (not the function's)."""
        if self.options is None:
            return ()
        return tuple(arg.keyword.value for arg in self.options.args if arg.keyword is not None)

    def consumes(self, parameter: Definition) -> bool | None:
        """Does the transform trace or differentiate what `parameter` receives? None when its
        keywords are not literals. `jax.jit` traces all but static arguments, `jax.grad`
        differentiates `argnums` (default 0), `jax.vmap` maps the arguments whose `in_axes` is
        not None."""
        return _consumes(self, parameter)


def _parameters(facts: Facts, function: Function, offset: int, bound_names: frozenset[str]) -> tuple[Definition, ...]:
    found = [d for definitions in facts.defined_in(function).values() for d in definitions
             if d.position is not None and d.position >= offset and d.name not in bound_names]
    return tuple(sorted(found, key=lambda d: d.position or 0))


def applied(facts: Facts, node: cst.Call, site: Site) -> Application | None:
    """`T(f, ...)` for a transform `T` that wraps `f` (not jvp/vjp, which call it at once)."""
    qualname = facts.qualname(node.func, site.scope)
    transform = jax_api.transform(qualname)
    if qualname is None or transform is None or transform.calls_now:
        return None
    target = argument_at(node, "fun", 0) or argument_at(node, "f", 0)
    if target is None:
        return None
    return _application(facts, qualname, transform, node.func, node, node, target.value, site)


def decorations(facts: Facts, function: cst.FunctionDef, site: Site) -> list[Application]:
    """`@T`, `@T(...)` and `@functools.partial(T, ...)` on `function` (`site`: where the def is)."""
    found = []
    for decorator in function.decorators:
        expression = decorator.decorator
        applies, where = facts.decorator_value(expression, site.scope)
        options = applies if isinstance(applies, cst.Call) else None
        spelled = applies.func if isinstance(applies, cst.Call) else applies
        qualname = facts.qualname(spelled, where)
        if options is not None and qualname == "functools.partial":
            args = positional_args(options, before_star=True)
            if not args:
                continue
            spelled = args[0].value
            qualname = facts.qualname(spelled, where)
        if applies is not expression:
            spelled = expression  # `@jit_static`: name the decorator as written
        transform = jax_api.transform(qualname)
        if qualname is None or transform is None or transform.calls_now:
            continue
        # a decorated method is wrapped unbound: `self` is its first argument
        found.append(Application(qualname, transform, spelled, expression, options, function, 0,
                                 frozenset(), site, _parameters(facts, function, 0, frozenset()), decorator=True))
    return found


def _application(facts: Facts, qualname: str, transform: jax_api.Transform, spelled: cst.BaseExpression,
                 node: cst.BaseExpression, options: cst.Call, target: cst.BaseExpression,
                 site: Site) -> Application | None:
    resolved = Reach(facts).function(target, site.scope)
    if resolved is None:
        return None
    bound_names: frozenset[str] = frozenset()
    if isinstance(target, cst.Call):  # functools.partial(f, ..., name=value)
        bound_names = frozenset(arg.keyword.value for arg in target.args if arg.keyword is not None)
    function, offset = resolved
    return Application(qualname, transform, spelled, node, options, function, offset, bound_names, site,
                       _parameters(facts, function, offset, bound_names))


def calls(facts: Facts, application: Application) -> list[tuple[cst.Call, Site]]:
    """The calls of the transformed result: `jax.jit(f)(...)`, `g = jax.jit(f); g(...)`, or the
    decorated function's own calls."""
    if application.decorator:
        return facts.calls_of(application.function)  # type: ignore[arg-type]
    names = facts.index.assignments_of(application.node)
    called = facts.index.call_of(application.node)
    found = [called] if called is not None else []
    for name in {binding.name for binding in names}:
        for call, site in facts.index.calls_named(name):
            meaning = _meaning(facts, call.func, site)  # type: ignore[arg-type]
            if meaning is not None and meaning in names:
                found.append((call, site))
    return sorted(found, key=lambda call: call[1].order)


def _meaning(facts: Facts, name: cst.Name, site: Site) -> Binding | None:
    """The binding a name most likely holds at `site`: the last one before it in the same scope,
    else the last one of the scope that defines it (`step = jax.jit(step)` rebinds `step`)."""
    bindings = facts.lookup(name.value, site.scope)
    if not bindings:
        return None
    if bindings[0].scope is site.scope:
        before = [b for b in bindings if b.order < site.order]
        return before[-1] if before else None
    return bindings[-1]


def module_argument(facts: Facts, application: Application, parameter: Definition) -> ModuleClass | None:
    """The Equinox module class `parameter` receives: from its annotation, else from the calls
    of the transformed result when they all agree."""
    param = record_of(parameter)
    if param.annotation is not None:
        annotation = param.annotation
        outer = annotation.value if isinstance(annotation, cst.Subscript) else annotation
        declared = facts.module_type(outer, param.scope.parent or param.scope)
        if declared is not None:
            return declared
    if application.decorator and _is_method(param) and param.path == (0,):  # `self`: an instance of the class
        owner = param.scope.parent.node  # type: ignore[union-attr]
        binding = facts.binding_of(owner)  # type: ignore[arg-type]
        if binding is not None and facts.is_module_class(binding):
            return ModuleClass(owner, owner.name.value)  # type: ignore[arg-type, union-attr]
        return None
    classes = set()
    for call, site in calls(facts, application):
        bound = 1 if application.decorator and _is_method(param) else application.offset
        argument = argument_for(call, param, bound)
        if argument is not None:
            classes.add(facts.module_class(argument, site))
    classes.discard(None)
    return classes.pop() if len(classes) == 1 else None


def _is_method(param: Binding) -> bool:
    return param.scope.parent is not None and param.scope.parent.kind == CLASS


def _consumes(application: Application, parameter: Definition) -> bool | None:
    options = application.options
    position = (parameter.position or 0) - application.offset
    transform = application.transform
    if transform.wrt == "argnums":
        given = keyword_arg(options, "argnums") if options is not None else None
        numbers = literals.integers(given.value) if given is not None else frozenset({0})
        return None if numbers is None else position in numbers
    if transform.wrt == "first":
        return position == 0
    if not transform.traces:
        return False
    for keyword in transform.static if options is not None else ():
        given = keyword_arg(options, keyword) if options is not None else None
        if given is None:
            continue
        if keyword.endswith("argnames"):
            names = literals.strings(given.value)
            if names is None:
                return None
            if parameter.name in names:
                return False
        else:
            numbers = literals.integers(given.value)
            if numbers is None:
                return None
            if position in numbers:
                return False
    in_axes = keyword_arg(options, "in_axes") if options is not None else None
    if in_axes is None or isinstance(in_axes.value, cst.Integer):
        return True
    if isinstance(in_axes.value, (cst.Tuple, cst.List)):
        elements = in_axes.value.elements
        if position >= len(elements):
            return None
        axis = elements[position].value
        if isinstance(axis, cst.Name) and axis.value == "None":
            return False
        return True if isinstance(axis, (cst.Integer, cst.UnaryOperation)) else None
    return None
