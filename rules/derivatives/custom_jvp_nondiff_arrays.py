"""ODL101: `jax.custom_jvp` / `jax.custom_vjp` whose `nondiff_argnums` receive arrays."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import libcst as cst
from odelint.analysis import (
    DefinedAs,
    Definition,
    Needs,
    Site,
    argument_at,
    instance_class,
    jax_api,
    keyword_arg,
    literals,
    method_of,
    positional_args,
    source_of,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule
from odelint.rules.derivatives.common import Registration, Registrations, positional_params, single_def

CUSTOM: dict[str, str] = jax_api.names_table("custom_derivatives")
_CUSTOM_NAMES = frozenset(CUSTOM)
PARTIALS = jax_api.names("partials")
ARRAY_TYPES = jax_api.names("array_annotations")
ARRAY_MAKERS = tuple(sorted(jax_api.names("array_makers")))
# jax.numpy / jax.random functions whose result is metadata, never an array
NOT_ARRAYS = jax_api.names("metadata_functions")
# Annotations that say a parameter holds a dtype and no array. (`DTypeLike` is not one: it
# admits any object with a `.dtype`, arrays included.)
DTYPE_TYPES = jax_api.names("dtype_annotations")
_PARTIAL = jax_api.name("partial")
_OPTIONAL = jax_api.name("optional")
_FILTER_CUSTOM_JVP = jax_api.name("filter_custom_jvp")


@dataclasses.dataclass
class _Definition:
    """One custom-derivative function declared with non-differentiable arguments."""

    flavour: str                              # "jvp" or "vjp"
    spec: cst.Call                            # the call holding nondiff_argnums / nondiff_argnames
    report: cst.Arg                           # the `nondiff_arg...=` argument
    params: list[cst.Param]
    nondiff: list[int]
    defined: Definition | None                # the name the custom function is bound to
    function: cst.FunctionDef | None = None   # the decorated function (decorator form)
    decorator: cst.Decorator | None = None
    site: Site | None = None


# binds `f` twice: the fix must leave it alone (examples of CustomJvpNondiffArrays)
_CALLED_TWICE = (
    "import functools\nimport jax\nimport equinox as eqx\n\n"
    "@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))\ndef apply(f, y):\n    return f(y)\n\n"
    "@apply.defjvp\ndef apply_jvp(f, primals, tangents):\n    return jax.jvp(f, primals, tangents)\n\n"
    "def run(key, y):\n    mlp = eqx.nn.MLP(2, 2, 4, 1, key=key)\n    return apply(y, f=mlp)\n"
)


class CustomJvpNondiffArrays(Rule):
    """Arrays reach a `jax.custom_jvp`/`custom_vjp` through `nondiff_argnums`.

    ## What it does
    Flags `jax.custom_jvp` / `jax.custom_vjp` (as a `functools.partial(...)` decorator or
    called on a function) with `nondiff_argnums` or `nondiff_argnames`, when a
    non-differentiable argument can carry arrays: a call in this file passes an Equinox
    module, a bound method of one, an `eqx.Partial` / `jax.tree_util.Partial`, a
    closure over a local of the enclosing function, or an array (also when it reaches the
    call through a helper's parameter); or a tracer (a parameter of a jitted function, whatever
    its callers pass: always for `custom_vjp`, for `custom_jvp` when the call is also
    differentiated); or the parameter is
    annotated as a module, `jax.Array`, `eqx.Partial` or a jaxtyping type. Plain functions
    (`jnp.sin`, a module-level `def`) and static Python values are JAX's documented use
    and are not flagged.

    ## Why is this bad?
    JAX treats those arguments as constants of the derivative rule. Their arrays are
    wrapped in `stop_gradient`, so differentiating the module's own parameters silently
    returns zeros (`[0. 0. 0.]` instead of `[0.692 0.216 -0.271]` in the fixture). Under
    `jit` + `lax.scan` + `grad`, the rule captures the traced arrays and fails:

        jax.errors.UnexpectedTracerError: Encountered an unexpected tracer. A function
        transformed by JAX had a side effect, allowing for a reference to an
        intermediate value with type float32[3] wrapped in a DynamicJaxprTracer to
        escape the scope of the transformation.

    `custom_vjp` refuses traced non-differentiable arguments outright ("Tracers cannot
    be passed as non-differentiable arguments to custom_vjp functions"). See equinox#745,
    jax#20889 (do not use `nondiff_argnums` for array-valued arguments), jax#23065,
    jax#2912, jax#14009.

    ## Example
    ```python
    @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
    def apply(f, y):
        return f(y)

    @apply.defjvp
    def apply_jvp(f, primals, tangents):
        return jax.jvp(f, primals, tangents)

    apply(Field(w), y)
    ```

    ## Use instead
    ```python
    @eqx.filter_custom_jvp
    def apply(y, *, f):
        return f(y)

    @apply.def_jvp
    def apply_jvp(primals, tangents, *, f):
        return jax.jvp(f, primals, tangents)

    apply(y, f=Field(w))
    ```
    Keyword arguments of `eqx.filter_custom_jvp` are never differentiated: when the
    module's own arrays need a gradient, pass it positionally instead and handle its
    tangent in the rule, e.g. `eqx.filter_jvp(lambda f, y: f(y), primals, tangents)`.
    For `custom_vjp`, use `eqx.filter_custom_vjp` with the differentiated values as its
    first argument.

    ## Fix safety
    Unsafe, and offered only for a `custom_jvp` decorator whose every use is visible and
    mechanical: the JVP rule registered once with `defjvp` (its leading parameters named
    like the non-differentiable ones) and only direct calls, in this file, outside
    `__all__`, and not for a closure (as a keyword it still carries its tracer). Callers in
    other modules would break; arguments moved to keywords are
    evaluated in a different order; the rule now receives `None` for tangents of inputs
    that are not differentiated (ODL102 checks that); and if the module's arrays are
    differentiated, Equinox raises `ValueError: Received keyword tangent`, which is loud
    but still needs the positional rewrite above.
    """

    code = "ODL101"
    name = "custom-jvp-nondiff-arrays"
    summary = "Arrays are passed through nondiff_argnums of jax.custom_jvp/custom_vjp"
    triggers = (("nondiff_arg", "custom_jvp"), ("nondiff_arg", "custom_vjp"))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL101"

    needs = Needs.configures(*_CUSTOM_NAMES, keywords=("nondiff_argnums", "nondiff_argnames"))

    def __init__(self, context) -> None:
        super().__init__(context)
        self._definitions: list[_Definition] = []
        self._registrations = Registrations(self.facts)
        self._direct_calls: dict[int, cst.Call] = {}     # id of the Name called -> the call
        self._not_references: set[int] = set()           # attribute and keyword names
        self._names: list[tuple[cst.Name, Site]] = []

    # -- collecting --------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef, site: Site) -> None:
        self._registrations.visit_function(node, site)
        for decorator in node.decorators:
            spec = decorator.decorator
            flavour = self._partial_flavour(spec, site)
            if flavour is not None:
                self._declare(flavour, spec, positional_params(node.params),  # type: ignore[arg-type]
                              self.facts.definition_of(node), function=node, decorator=decorator, site=site)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        self._registrations.visit_call(node, site)
        if isinstance(node.func, cst.Name):
            self._direct_calls[id(node.func)] = node
        self._not_references.update(id(arg.keyword) for arg in node.args if arg.keyword is not None)
        flavour = CUSTOM.get(self.facts.qualname(node.func, site.scope) or "")
        spec = node
        if flavour is None:
            flavour = self._partial_flavour(node.func, site)
            spec = node.func  # type: ignore[assignment]
        args = positional_args(node)
        if flavour is None or not args:
            return
        target = args[0].value
        function = single_def(self.facts, target, site)
        params = positional_params(function.params) if function is not None else (
            positional_params(target.params) if isinstance(target, cst.Lambda) else [])
        self._declare(flavour, spec, params, self.facts.assigned_to(node, site), site=site)

    def visit_Attribute(self, node: cst.Attribute, site: Site) -> None:
        self._not_references.add(id(node.attr))

    def visit_Name(self, node: cst.Name, site: Site) -> None:
        self._names.append((node, site))

    def _partial_flavour(self, node: cst.BaseExpression, site: Site) -> str | None:
        """`functools.partial(jax.custom_jvp, nondiff_argnums=...)` -> "jvp"."""
        if not isinstance(node, cst.Call) or self.facts.qualname(node.func, site.scope) != _PARTIAL:
            return None
        args = positional_args(node)
        return CUSTOM.get(self.facts.qualname(args[0].value, site.scope) or "") if args else None

    def _declare(self, flavour: str, spec: cst.Call, params: list[cst.Param], defined: Definition | None,
                 **where) -> None:
        for name in ("nondiff_argnums", "nondiff_argnames"):
            arg = keyword_arg(spec, name)
            if arg is None:
                continue
            nondiff = _positions(arg.value, params)
            if nondiff:
                self._definitions.append(_Definition(flavour, spec, arg, params, nondiff, defined, **where))
            return

    # -- checking ----------------------------------------------------------------------

    def finish(self) -> None:
        for definition in self._definitions:
            evidence = self._evidence(definition)
            if evidence is not None:
                self._report(definition, *evidence)

    def _calls(self, definition: _Definition) -> list[tuple[cst.Call, Site]]:
        defined = definition.defined
        if defined is None:
            return []
        if definition.function is not None:
            return self.facts.calls_of(definition.function)
        return [(call, site) for call, site in self.facts.sites_of(cst.Call)
                if isinstance(call.func, cst.Name) and self.facts.definitions(call.func, site) == (defined,)]

    def _evidence(self, definition: _Definition) -> tuple[str, str] | None:
        """(parameter, what it holds) for the first array-carrying non-differentiable argument."""
        where = definition.site
        for position in definition.nondiff:
            param = definition.params[position] if position < len(definition.params) else None
            label = param.name.value if param else f"argument {position}"
            if param is not None and param.annotation is not None and where is not None:
                annotation = param.annotation.annotation
                if self._is_dtype_type(annotation, where):
                    continue
                what = self._annotation_carries(annotation, where)
                if what:
                    return label, f"is annotated as {what} (`{source_of(self.context.module, annotation)}`)"
            for call, site in self._calls(definition):
                arg = argument_at(call, param.name.value if param is not None else None, position)
                value = arg.value if arg is not None else None
                what = self._carries(value, site) if value is not None else None
                if what and value is not None:
                    return label, f"receives {what} (`{source_of(self.context.module, value)}`)"
                traced = self._tracer(definition, value, site) if value is not None else None
                if traced:
                    return label, traced
        return None

    def _tracer(self, definition: _Definition, value: cst.BaseExpression, site: Site) -> str | None:
        """A traced value (a jitted function's parameter is one whatever its callers pass):
        `custom_vjp` refuses it outright; `custom_jvp` fails once the call is also differentiated."""
        traced = self.facts.traced_value(value, site)
        if traced is None or (definition.flavour == "jvp" and self.facts.differentiated_by(site) is None):
            return None
        origin = f"`{traced.parameter.name}` is {traced.reason}{traced.passed()}"
        source = source_of(self.context.module, value)
        return f"receives a tracer ({origin if source == traced.parameter.name else f'`{source}`: {origin}'})"

    def _annotation_carries(self, annotation: cst.BaseExpression, site: Site) -> str | None:
        scope = site.scope
        if self.facts.is_module_type(annotation, scope):
            return "an Equinox module"
        if isinstance(annotation, cst.Subscript):
            qualname = self.facts.qualname(annotation.value, scope) or ""
            return "an array" if qualname.startswith("jaxtyping.") else None
        name = self.facts.qualname(annotation, scope)
        if name in ARRAY_TYPES:
            return "an array"
        return "a `Partial`" if name in PARTIALS else None

    def _is_dtype_type(self, annotation: cst.BaseExpression, site: Site) -> bool:
        """`jnp.dtype`, `np.dtype`, and their `Optional[...]` / `X | None` forms."""
        scope = site.scope
        if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
            sides = (annotation.left, annotation.right)
            return all(literals.is_none(side) or self._is_dtype_type(side, site) for side in sides) \
                and not all(literals.is_none(side) for side in sides)
        optional = isinstance(annotation, cst.Subscript) and \
            self.facts.qualname(annotation.value, scope) == _OPTIONAL
        if optional and isinstance(annotation, cst.Subscript):
            element = annotation.slice[0].slice if len(annotation.slice) == 1 else None
            return isinstance(element, cst.Index) and self._is_dtype_type(element.value, site)
        return self.facts.qualname(annotation, scope) in DTYPE_TYPES

    def _carries(self, value: cst.BaseExpression, site: Site, depth: int = 0) -> str | None:
        """What array-carrying kind of value this argument is, or None."""
        facts = self.facts
        if facts.is_module(value, site):
            return "an Equinox module"
        if isinstance(value, cst.Attribute) and facts.is_module(value.value, site):
            cls = instance_class(facts, value.value, site.scope)
            name = value.attr.value
            if name == "__call__" or (cls is not None and method_of(facts, cls, name) is not None):
                return "a bound method of an Equinox module"
        if isinstance(value, cst.Call):
            qualname = facts.qualname(value.func, site.scope) or ""
            if qualname in PARTIALS:
                return "a `Partial`"
            if qualname.startswith(ARRAY_MAKERS) and qualname not in NOT_ARRAYS:
                return "an array"
        if isinstance(value, cst.Lambda):
            closed = self._closed_over(value)
            return f"a closure over `{closed}`" if closed else None
        found = facts.definition(value, site) if isinstance(value, cst.Name) and depth < 3 else None
        if found is None:
            return None
        if found.what is DefinedAs.FUNCTION:
            closed = self._closed_over(found.node)  # type: ignore[arg-type]
            return f"a closure over `{closed}`" if closed else None
        if found.value is not None:
            return self._carries(found.value, found.site, depth + 1)
        if found.what is DefinedAs.PARAMETER and found.annotation is not None:
            return self._annotation_carries(found.annotation, found.annotation_site)
        if found.what is DefinedAs.PARAMETER:
            return self._passed_in(found, depth)
        return None

    def _passed_in(self, parameter: Definition, depth: int) -> str | None:
        """What a call of this file passes for an unannotated parameter, when it carries arrays
        (`helper(lambda y: y * t, x)` then `apply(f, x)` inside `helper`)."""
        function = parameter.function
        for argument, site in self.facts.passed_for(parameter):
            what = self._carries(argument, site, depth + 1) if argument is not None else None
            if what and argument is not None and isinstance(function, cst.FunctionDef):
                return (f"{what}, passed as `{parameter.name}` to `{function.name.value}` "
                        f"(`{source_of(self.context.module, argument)}`)")
        return None

    def _closed_over(self, function: cst.FunctionDef | cst.Lambda) -> str | None:
        """A local of an enclosing function that this function reads (a possibly traced value)."""
        for name, definitions in self.facts.captured(function):
            if any(_may_hold_array(d) for d in definitions):
                return name.value
        return None

    # -- reporting and fixing ----------------------------------------------------------

    def _report(self, definition: _Definition, label: str, holds: str) -> None:
        name = definition.defined.name if definition.defined else "the function"
        if definition.flavour == "vjp":
            advice = ("use `eqx.filter_custom_vjp` with the differentiated values as its first argument "
                      "(its other arguments may hold arrays)")
        else:
            diff = [p.name.value for i, p in enumerate(definition.params) if i not in definition.nondiff]
            static = [definition.params[i].name.value for i in definition.nondiff if i < len(definition.params)]
            advice = (f"use `eqx.filter_custom_jvp` with `def {name}({', '.join(diff)}, *, {', '.join(static)})` "
                      f"and a `.def_jvp` rule `(primals, tangents, *, {', '.join(static)})`; if `{label}`'s arrays "
                      f"are differentiated, pass it positionally and handle its tangent (e.g. `eqx.filter_jvp`)")
        harm = ("its arrays get a silently zero gradient and leak tracers under jit/scan" if definition.flavour == "jvp"
                else "custom_vjp raises UnexpectedTracerError once its arrays are traced")
        message = (f"`{name}` is a `jax.custom_{definition.flavour}` whose non-differentiable `{label}` "
                   f"{holds}: {harm}; {advice}")
        # a closure keeps its tracer when passed by keyword too (UnexpectedTracerError): no fix
        plan = self._fix_plan(definition) if "a closure over" not in holds else None
        fix = None
        if plan is not None:
            fix = self.fix("Rewrite as `eqx.filter_custom_jvp` with the non-differentiable arguments keyword-only",
                           lambda: self._rewrite(definition, *plan), safe=False)
        self.report(definition.report, message, fix=fix)

    def _fix_plan(self, definition: _Definition) -> tuple[Registration, list[cst.Call]] | None:
        """The registration and the calls to rewrite, when every use is mechanical."""
        function, defined = definition.function, definition.defined
        if definition.flavour != "jvp" or function is None or defined is None or definition.decorator is None:
            return None
        params = function.params
        if (params.posonly_params or params.kwonly_params or isinstance(params.star_arg, cst.CSTNode)
                or params.star_kwarg is not None or len(definition.spec.args) != 2
                or len(definition.nondiff) >= len(params.params) or definition.nondiff[-1] >= len(params.params)
                or _exported(self.facts, defined.name)):
            return None
        registrations = self._registrations.of(defined)
        if len(registrations) != 1 or registrations[0].attribute.attr.value != "defjvp":
            return None
        registration = registrations[0]
        if not self._rule_fits(registration, [params.params[i].name.value for i in definition.nondiff]):
            return None
        references = self._references(defined)
        if references is None:
            return None
        calls: list[cst.Call] = []
        for reference in references:
            if reference is registration.owner:
                continue
            call = self._direct_calls.get(id(reference))
            if call is None or _moved_args(call, definition) is None:
                return None
            calls.append(call)
        return (registration, calls) if not _nested(calls) else None

    def _rule_fits(self, registration: Registration, static: list[str]) -> bool:
        rule = registration.rule
        if rule is None:
            return False
        params = rule.params
        if (params.posonly_params or params.kwonly_params or isinstance(params.star_arg, cst.CSTNode)
                or params.star_kwarg is not None or len(params.params) != len(static) + 2
                or [p.name.value for p in params.params[:len(static)]] != static):
            return False
        if registration.decorator is not None and len(rule.decorators) != 1:
            return False
        rule_defined = self.facts.definition_of(rule)
        uses = self._references(rule_defined) if rule_defined else None
        return uses is not None and len(uses) == (0 if registration.decorator is not None else 1)

    def _references(self, definition: Definition) -> list[cst.Name] | None:
        """Every name that reads this definition; None when some name may mean it or another."""
        found = []
        for name, site in self._names:
            if name.value != definition.name or id(name) in self._not_references:
                continue
            meanings = self.facts.definitions(name, site)
            if definition in meanings:
                if meanings != (definition,):
                    return None
                found.append(name)
        return found

    def _rewrite(self, definition: _Definition, registration: Registration, calls: list[cst.Call]) -> Edits:
        function, decorator = definition.function, definition.decorator
        assert function is not None and decorator is not None and registration.rule is not None
        reference, imports = self.facts.reference(_FILTER_CUSTOM_JVP, definition.site)  # type: ignore[arg-type]
        params = function.params.params
        static = [params[i] for i in definition.nondiff]
        dynamic = [p for i, p in enumerate(params) if i not in definition.nondiff]
        rule_params = registration.rule.params.params
        edits = [
            Replace(decorator, decorator.with_changes(decorator=reference)),
            Replace(function.params, _keyword_only(function.params, dynamic, static)),
            Replace(registration.attribute, registration.attribute.with_changes(attr=cst.Name("def_jvp"))),
            Replace(registration.rule.params,
                    _keyword_only(registration.rule.params, rule_params[len(static):], rule_params[:len(static)])),
        ]
        for call in calls:
            edits.append(Replace(call, call.with_changes(args=_moved_args(call, definition))))
        return Edits(edits, imports)

    examples = (
        # the decorator form with a same-file module: the keyword-only rewrite
        Flag("""
            import functools

            import equinox as eqx
            import jax
            import jax.numpy as jnp


            class Field(eqx.Module):
                w: jax.Array

                def __call__(self, y):
                    return jnp.tanh(self.w * y)


            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def apply(f, y):
                return f(y)


            @apply.defjvp
            def apply_jvp(f, primals, tangents):
                (y,), (ty,) = primals, tangents
                return apply(f, y), jax.jvp(f, (y,), (ty,))[1]


            def step(w, y):
                return apply(Field(w), y)
        """, fixed="""
            import functools

            import equinox as eqx
            import jax
            import jax.numpy as jnp


            class Field(eqx.Module):
                w: jax.Array

                def __call__(self, y):
                    return jnp.tanh(self.w * y)


            @eqx.filter_custom_jvp
            def apply(y, *, f):
                return f(y)


            @apply.def_jvp
            def apply_jvp(primals, tangents, *, f):
                (y,), (ty,) = primals, tangents
                return apply(y, f=f), jax.jvp(f, (y,), (ty,))[1]


            def step(w, y):
                return apply(y, f=Field(w))
        """,
            unsafe=True,
            message="non-differentiable `f` receives an Equinox module (`Field(w)`)",
            span="15:36-15:56",
        ),
        # from-imports, JAX's call-form registration, two non-differentiable arguments,
        # no equinox import yet: `import equinox as eqx` is added
        Flag("""
            from functools import partial
            from jax import custom_jvp
            import jax.numpy as np

            @partial(custom_jvp, nondiff_argnums=(0, 2))
            def scaled(f, x, scale):
                return scale * f(x)

            def scaled_jvp(f, scale, primals, tangents):
                return scaled(f, primals[0], scale), tangents[0]

            scaled.defjvp(scaled_jvp)

            def run(x):
                return scaled(jnp_fn, x, np.ones(3))

            jnp_fn = np.sin
        """, fixed="""
            from functools import partial
            from jax import custom_jvp
            import jax.numpy as np
            import equinox as eqx

            @eqx.filter_custom_jvp
            def scaled(x, *, f, scale):
                return scale * f(x)

            def scaled_jvp(primals, tangents, *, f, scale):
                return scaled(primals[0], f=f, scale=scale), tangents[0]

            scaled.def_jvp(scaled_jvp)

            def run(x):
                return scaled(x, f=jnp_fn, scale=np.ones(3))

            jnp_fn = np.sin
        """,
            unsafe=True,
            message="`scale` receives an array (`np.ones(3)`)",
            span="5:22-5:44",
        ),
        # a bound method, an eqx.Partial, a closure, an annotation; custom_vjp and the
        # call form get no fix
        Flag("""
            import equinox as eqx
            import jax

            class Net(eqx.Module):
                w: jax.Array
                def forward(self, y):
                    return self.w * y

            def g(f, y):
                return f(y)

            h = jax.custom_jvp(g, nondiff_argnums=(0,))
            k = jax.custom_vjp(g, nondiff_argnums=[0])

            def loss(net: Net, w, y):
                a = h(net.forward, y)
                b = k(lambda y: w * y, y)
                return a + b

            @eqx.filter_jit
            def loss2(w, y):
                p = eqx.Partial(lambda w, y: w * y, w)
                return h(p, y)
        """,
            count=2,
            message="`h` is a `jax.custom_jvp` whose non-differentiable `f` receives a bound method",
            span=("12:23-12:43", "13:23-13:42"),
        ),
        Flag("""
            import functools as ft
            import jax
            from jaxtyping import Array, Float

            @ft.partial(jax.custom_vjp, nondiff_argnames=('w',))
            def f(x, w: Float[Array, 'n']):
                return x * w
        """,
            message="`w` is annotated as an array (`Float[Array, 'n']`)",
            span="5:29-5:52",
        ),
        # a call that binds `f` twice (a TypeError when run): reported, left as it is, since
        # moving `y` to the keyword `f` would write `apply(f=mlp, f=y)`, a SyntaxError
        Flag(
            _CALLED_TWICE,
            fixed=_CALLED_TWICE,
            unsafe=True,
            span="5:36-5:56",
        ),
        # used elsewhere than by a direct call (here: passed to vmap): reported, no fix
        Flag("""
            import functools
            import jax
            import equinox as eqx

            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def apply(f, y):
                return f(y)

            @apply.defjvp
            def apply_jvp(f, primals, tangents):
                return jax.jvp(f, primals, tangents)

            def run(key, y):
                mlp = eqx.nn.MLP(2, 2, 4, 1, key=key)
                return jax.vmap(apply, in_axes=(None, 0))(mlp, y)
        """, span="5:36-5:56",
        ),
        # JAX's documented use: plain functions and static values
        Pass("""
            from functools import partial
            import jax
            import jax.numpy as jnp

            @partial(jax.custom_jvp, nondiff_argnums=(0, 2))
            def app(f, x, n):
                return f(x) * n

            @app.defjvp
            def app_jvp(f, n, primals, tangents):
                x, = primals
                t, = tangents
                return app(f, x, n), 2.0 * t

            def square(y):
                return y ** 2

            def run(x, k):
                scale = 3
                a = app(jnp.sin, x, 2)
                b = app(square, x, k)
                c = app(lambda y: scale * y ** 2, x, 1)
                return a + b + c + app(jnp.vectorize(square), x, 1)
        """
        ),
        # Equinox's own filter_custom_jvp, a custom_jvp without nondiff_argnums, and a
        # module passed to a *differentiable* argument
        Pass("""
            import equinox as eqx
            import jax

            @eqx.filter_custom_jvp
            def apply(y, *, f):
                return f(y)

            @jax.custom_jvp
            def plain(f, y):
                return f(y)

            import functools
            @functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
            def other(f, n):
                return f(n)

            def run(key, y):
                mlp = eqx.nn.MLP(2, 2, 4, 1, key=key)
                return apply(y, f=mlp), plain(mlp, y), other(mlp, 3)
        """
        ),
        # dtypes and shapes computed by jax.numpy are static metadata, not arrays; so is a
        # parameter annotated as a dtype (distrax's von Mises sampler)
        Pass("""
            import functools
            from typing import Optional
            import jax
            import jax.numpy as jnp
            import numpy as np

            @functools.partial(jax.custom_jvp, nondiff_argnums=(0, 2))
            def sample(shape, c, dtype: jnp.dtype):
                return jnp.zeros(shape, dtype) + c

            @sample.defjvp
            def sample_jvp(shape, dtype, primals, tangents):
                return sample(shape, primals[0], dtype), tangents[0]

            @functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2))
            def cdf(x, dtype: Optional[jnp.dtype] = None, like: np.dtype | None = None):
                return x

            class Dist:
                def sample(self, x, loc):
                    dtype = jnp.result_type(x, loc)
                    s = sample(jnp.shape(x), x, dtype)
                    s = s + sample(x.shape, x, jnp.promote_types(x.dtype, loc.dtype))
                    return s + cdf(x, jnp.dtype('float32'), jnp.finfo(dtype).dtype)
        """
        ),
        # a local `partial` that is not functools', and a custom_jvp name that is not JAX's
        Pass("""
            import equinox as eqx

            def partial(*a, **k):
                return lambda f: f

            def custom_jvp(f, nondiff_argnums=()):
                return f

            @partial(custom_jvp, nondiff_argnums=(0,))
            def apply(f, y):
                return f(y)

            apply(eqx.nn.Linear(2, 2, key=None), 1.0)
        """
        ),
        # a jitted function's parameter is a tracer even though every caller passes a Python float
        Flag("""
            import functools
            import jax
            import jax.numpy as jnp


            @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
            def clip_gradient(bound, x):
                return x


            def clip_fwd(bound, x):
                return x, None


            def clip_bwd(bound, _, g):
                return (jnp.clip(g, -bound, bound),)


            clip_gradient.defvjp(clip_fwd, clip_bwd)


            @jax.jit
            def loss(w, bound):
                return jnp.sum(clip_gradient(bound, w) ** 2)


            g = jax.grad(loss)(jnp.ones(3), 0.5)
        """, message="non-differentiable `bound` receives a tracer (`bound` is a parameter of `loss`, "
                     "traced by `jax.jit`)", span="6:36-6:56"),
        Flag("""
            import functools
            import jax
            import jax.numpy as jnp


            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def scaled_tanh(scale, x):
                return jnp.tanh(scale * x)


            @scaled_tanh.defjvp
            def scaled_tanh_jvp(scale, primals, tangents):
                (x,), (t,) = primals, tangents
                y = scaled_tanh(scale, x)
                return y, scale * (1 - y ** 2) * t


            @jax.jit
            def loss(x, scale):
                return jnp.sum(scaled_tanh(scale, x))


            g = jax.grad(loss)(jnp.ones(3), 2.0)
        """, fixed="""
            import functools
            import jax
            import jax.numpy as jnp
            import equinox as eqx


            @eqx.filter_custom_jvp
            def scaled_tanh(x, *, scale):
                return jnp.tanh(scale * x)


            @scaled_tanh.def_jvp
            def scaled_tanh_jvp(primals, tangents, *, scale):
                (x,), (t,) = primals, tangents
                y = scaled_tanh(x, scale=scale)
                return y, scale * (1 - y ** 2) * t


            @jax.jit
            def loss(x, scale):
                return jnp.sum(scaled_tanh(x, scale=scale))


            g = jax.grad(loss)(jnp.ones(3), 2.0)
        """, unsafe=True, message="receives a tracer (`scale` is a parameter of `loss`, traced by `jax.jit`)",
            span="6:36-6:56"),
        # a closure over the outer rule's tangent, handed over through a helper's parameter: no fix
        # (as a keyword it would keep its tracer too)
        Flag("""
            import functools
            import jax
            import jax.numpy as jnp


            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def apply(f, y):
                return f(y)


            @apply.defjvp
            def apply_jvp(f, primals, tangents):
                return jax.jvp(f, primals, tangents)


            def damped(f, y):
                return 0.5 * apply(f, y)


            @jax.custom_jvp
            def softplus(x):
                return jnp.logaddexp(x, 0.0)


            @softplus.defjvp
            def softplus_jvp(primals, tangents):
                (x,), (t,) = primals, tangents
                return softplus(x), damped(lambda y: jax.nn.sigmoid(y) * t, x)
        """, message="receives a closure over `t`, passed as `f` to `damped`", span="6:36-6:56"),
        # the bound is static; the custom_jvp is traced but never differentiated
        Pass("""
            import functools
            import jax
            import jax.numpy as jnp


            @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
            def clip_gradient(bound, x):
                return x


            def clip_fwd(bound, x):
                return x, None


            def clip_bwd(bound, _, g):
                return (jnp.clip(g, -bound, bound),)


            clip_gradient.defvjp(clip_fwd, clip_bwd)


            @functools.partial(jax.jit, static_argnums=1)
            def loss(w, bound):
                return jnp.sum(clip_gradient(bound, w) ** 2)


            g = jax.grad(loss)(jnp.ones(3), 0.5)
        """),
        Pass("""
            import functools
            import jax
            import jax.numpy as jnp


            @functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
            def scaled_tanh(scale, x):
                return jnp.tanh(scale * x)


            @scaled_tanh.defjvp
            def scaled_tanh_jvp(scale, primals, tangents):
                (x,), (t,) = primals, tangents
                y = scaled_tanh(scale, x)
                return y, scale * (1 - y ** 2) * t


            @jax.jit
            def loss(x, scale):
                return jnp.sum(scaled_tanh(scale, x))


            y = loss(jnp.ones(3), 2.0)
        """),
    )


def _positions(node: cst.BaseExpression, params: list[cst.Param]) -> list[int]:
    """`nondiff_argnums=(0, 2)` / `nondiff_argnames=("f",)` as sorted positions."""
    items = node.elements if isinstance(node, (cst.Tuple, cst.List)) else [cst.Element(node)]
    names = [p.name.value for p in params]
    found = set()
    for item in items:
        value = item.value
        position, name = literals.integer(value), literals.string(value)
        if position is not None:
            found.add(position)
        elif name in names:
            found.add(names.index(name))
    return sorted(found)


def _may_hold_array(definition: Definition) -> bool:
    if definition.what in (DefinedAs.FUNCTION, DefinedAs.CLASS, DefinedAs.IMPORT):
        return False
    value = definition.value
    if value is not None:
        return not (isinstance(value, (cst.BaseNumber, cst.BaseString)) or (isinstance(value, cst.Name)
                                                     and value.value in ("None", "True", "False")))
    return True


def _exported(facts, name: str) -> bool:
    return name in (facts.exported_names() or ())


def _moved_args(call: cst.Call, definition: _Definition) -> list[cst.Arg] | None:
    """The call's arguments with the non-differentiable ones passed by keyword, or None."""
    args = positional_args(call)
    if args is None:
        return None
    names = [p.name.value for p in definition.params]
    kept, moved = [], []
    for position, arg in enumerate(args):
        if position in definition.nondiff:
            moved.append(cst.Arg(arg.value, keyword=cst.Name(names[position]),
                                 equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
        else:
            kept.append(arg)
    passed = {arg.keyword.value for arg in (*call.args, *moved) if arg.keyword is not None}
    if any(names[i] not in passed and definition.params[i].default is None for i in definition.nondiff):
        return None
    named = [arg for arg in call.args if arg.keyword is not None]
    # f(y, f=g): a TypeError already
    if any(arg.keyword is not None and arg.keyword.value in names[:len(args)] for arg in named):
        return None
    return [arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in (*kept, *named, *moved)]


def _keyword_only(params: cst.Parameters, dynamic: Sequence[cst.Param], static: Sequence[cst.Param]) -> cst.Parameters:
    def bare(param: cst.Param) -> cst.Param:
        return param.with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return params.with_changes(params=[bare(p) for p in dynamic], star_arg=cst.ParamStar(),
                               kwonly_params=[bare(p) for p in static])


def _nested(calls: list[cst.Call]) -> bool:
    """Does one call to rewrite sit inside another (whose rewrite would drop the inner one)?"""
    ids = {id(call) for call in calls}
    for call in calls:
        stack = list(call.children)
        while stack:
            node = stack.pop()
            if id(node) in ids:
                return True
            stack.extend(node.children)
    return False
