"""ODL102: a `filter_custom_jvp` rule does arithmetic on a tangent that may be `None`."""

from __future__ import annotations

import dataclasses
import functools

import libcst as cst
from odelint.analysis import DefinedAs, Definition, Facts, Needs, Site, jax_api, literals, text_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule
from odelint.rules.derivatives.common import Registration, Registrations, positional_params

# Calling these on `None` fails like arithmetic does.
ARRAY_FUNCTIONS = tuple(sorted(jax_api.names("array_functions")))
_FILTER_CUSTOM_JVP = jax_api.name("filter_custom_jvp")
_ZEROS_LIKE = jax_api.name("zeros_like")


@dataclasses.dataclass(frozen=True)
class _Tangent:
    definition: Definition
    index: tuple[int, ...]               # where in `tangents` it comes from
    statement: cst.BaseStatement | None  # its unpacking statement, when at the top of the rule


class UncheckedNoneTangent(Rule):
    """A tangent of an `eqx.filter_custom_jvp` rule is used without an `is None` check.

    ## What it does
    In a JVP rule registered with `.def_jvp` on an `eqx.filter_custom_jvp` function, flags
    a tangent unpacked from `tangents` that is used in arithmetic or passed to a
    `jax.numpy` / `jax.lax` / `jax.nn` function on a path with no `is None` check. Also
    flags the deprecated `.defjvp` registration.

    ## Why is this bad?
    Equinox passes `None` (a symbolic zero) as the tangent of every input that is not
    differentiated, including floating-point arrays that merely are not differentiated
    this time. The rule works while every input is differentiated and crashes as soon as
    one is not:

        TypeError: unsupported operand type(s) for *: 'DynamicJaxprTracer' and 'NoneType'

    (equinox#745, which led to the symbolic-zero documentation of Equinox 0.11.5.)
    `.defjvp` is deprecated since Equinox 0.10.7 and warns on every registration.

    ## Example
    ```python
    @softplus.def_jvp
    def softplus_jvp(primals, tangents):
        (x, beta), (tx, tb) = primals, tangents
        out = softplus(x, beta)
        s = jax.nn.sigmoid(beta * x)
        return out, s * tx + (x * s - out) / beta * tb
    ```

    ## Use instead
    ```python
    @softplus.def_jvp
    def softplus_jvp(primals, tangents):
        (x, beta), (tx, tb) = primals, tangents
        tx = jnp.zeros_like(x) if tx is None else tx
        tb = jnp.zeros_like(beta) if tb is None else tb
        ...
    ```

    ## Fix safety
    Safe: a zero array is what the symbolic zero stands for, and the guard changes nothing
    when the tangent is present. It is inserted right after the unpacking, reusing the
    file's own spelling of `jax.numpy` (`jnp`, or `jax.numpy` through `import jax`), and
    adding `import jax.numpy as jnp` only when there is none. For
    `.defjvp`, which filled in those zeros itself, the rename to `.def_jvp` comes with the
    same guards, and is offered only when `tangents` is used in no other way.
    """

    code = "ODL102"
    name = "unchecked-none-tangent"
    summary = "A filter_custom_jvp rule uses a tangent that may be None without checking"
    triggers = (("filter_custom_jvp", "def_jvp"), ("filter_custom_jvp", "defjvp"))
    needs = Needs.refers_to(_FILTER_CUSTOM_JVP)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL102"

    def __init__(self, context) -> None:
        super().__init__(context)
        self._registrations = Registrations(self.facts)

    def visit_FunctionDef(self, node: cst.FunctionDef, site: Site) -> None:
        self._registrations.visit_function(node, site)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        self._registrations.visit_call(node, site)

    def finish(self) -> None:
        for registration in self._registrations.found:
            method = registration.attribute.attr.value
            if method in ("def_jvp", "defjvp") and self._is_filter_custom_jvp(registration.owner, registration.site):
                self._check(registration, deprecated=method == "defjvp")

    def _is_filter_custom_jvp(self, name: cst.Name, site: Site) -> bool:
        found = self.facts.definition(name, site)
        if found is None:
            return False
        if found.what is DefinedAs.FUNCTION:
            return any(self.facts.qualname(d.decorator, found.site.scope) == _FILTER_CUSTOM_JVP
                       for d in found.node.decorators)  # type: ignore[attr-defined]
        return (isinstance(found.value, cst.Call)
                and self.facts.qualname(found.value.func, found.site.scope) == _FILTER_CUSTOM_JVP)

    def _check(self, registration: Registration, deprecated: bool) -> None:
        owner = registration.owner.value
        analysis = self._analyse(registration.rule) if registration.rule is not None else None
        unchecked = analysis.unchecked if analysis else {}
        names = ", ".join(f"`{name}`" for name in unchecked)
        if deprecated:
            message = (f"`{owner}.defjvp` is deprecated since Equinox 0.10.7 (it warns): use `.def_jvp`, "
                       f"whose tangents are `None` for inputs that are not differentiated")
            if unchecked:
                message += f"; then check {names} for None"
            fix = None
            if analysis is not None and not analysis.escapes and analysis.guardable():
                fix = self.fix("Use `.def_jvp` and treat `None` tangents as zeros",
                               lambda: self._guard(analysis, registration.attribute), safe=True)
            self.report(registration.attribute.attr, message, fix=fix)
            return
        if not unchecked or analysis is None:
            return
        first = next(iter(unchecked.values()))
        example = next(iter(unchecked))
        message = (f"tangent{'s' if len(unchecked) > 1 else ''} {names} of the `{owner}.def_jvp` rule "
                   f"{'are used as arrays' if len(unchecked) > 1 else 'is used as an array'} "
                   "without an `is None` check; "
                   f"Equinox passes `None` for inputs that are not differentiated (TypeError: unsupported "
                   f"operand type(s) ... 'NoneType'): add `{example} = jnp.zeros_like(...) if {example} is None "
                   f"else {example}`")
        fix = None
        if analysis.guardable():
            fix = self.fix("Treat `None` tangents as zeros", lambda: self._guard(analysis, None), safe=True)
        self.report(first, message, fix=fix)

    def _analyse(self, rule: cst.FunctionDef) -> _Analysis | None:
        params = positional_params(rule.params)
        local = self.facts.defined_in(rule)
        if len(params) < 2:
            return None
        primals, tangents = params[0].name.value, params[1].name.value
        if any(len(local.get(name, ())) != 1 for name in (primals, tangents)):
            return None  # a parameter that is reassigned: nothing to rely on
        found: dict[str, _Tangent] = {}
        sources: set[int] = set()
        for definitions in local.values():
            for definition in definitions:
                extracted = _extracted(definition, tangents)
                if extracted is not None:
                    index, source = extracted
                    sources.add(id(source))
                    found.setdefault(definition.name,
                                     _Tangent(definition, index, _top_statement(rule, definition.node)))
        if not found:
            return None
        unpacks: dict[int, set[str]] = {}
        for name, tangent in found.items():
            unpacks.setdefault(id(tangent.definition.node), set()).add(name)
        inside = next(iter(found.values())).definition.site  # a place in the rule's body
        walker = _tangent_visitor()(self, inside, unpacks, sources, tangents)
        rule.body.visit(walker)
        return _Analysis(rule, self.facts, local, inside, primals, {n: found[n] for n in walker.unchecked},
                         walker.unchecked, walker.escapes)

    def _guard(self, analysis: _Analysis, attribute: cst.Attribute | None) -> Edits:
        edits = []
        if attribute is not None:
            edits.append(Replace(attribute, attribute.with_changes(attr=cst.Name("def_jvp"))))
        if not analysis.tangents:
            return Edits(edits)
        zeros, imports = self.facts.reference(_ZEROS_LIKE, analysis.inside)
        spelled = text_of(zeros)
        lines: dict[int, list[cst.BaseStatement]] = {}
        for name, tangent in sorted(analysis.tangents.items(), key=lambda item: item[1].index):
            primal = analysis.primal(tangent)
            line = cst.parse_statement(f"{name} = {spelled}({primal}) if {name} is None else {name}\n")
            lines.setdefault(id(tangent.statement), []).append(line)
        body = analysis.rule.body
        statements: list[cst.BaseStatement | cst.BaseSmallStatement] = []
        for statement in body.body:
            statements.append(statement)
            statements.extend(lines.get(id(statement), []))
        edits.append(Replace(body, body.with_changes(body=statements)))
        return Edits(edits, imports)

    examples = (
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp


            @eqx.filter_custom_jvp
            def softplus(x, beta):
                return jnp.logaddexp(0.0, beta * x) / beta


            @softplus.def_jvp
            def softplus_jvp(primals, tangents):
                (x, beta), (tx, tb) = primals, tangents
                out = softplus(x, beta)
                s = jax.nn.sigmoid(beta * x)
                return out, s * tx + (x * s - out) / beta * tb
        """, fixed="""
            import equinox as eqx
            import jax
            import jax.numpy as jnp


            @eqx.filter_custom_jvp
            def softplus(x, beta):
                return jnp.logaddexp(0.0, beta * x) / beta


            @softplus.def_jvp
            def softplus_jvp(primals, tangents):
                (x, beta), (tx, tb) = primals, tangents
                tx = jnp.zeros_like(x) if tx is None else tx
                tb = jnp.zeros_like(beta) if tb is None else tb
                out = softplus(x, beta)
                s = jax.nn.sigmoid(beta * x)
                return out, s * tx + (x * s - out) / beta * tb
        """,
            message="tangents `tx`, `tb` of the `softplus.def_jvp` rule are used as arrays",
            span="16:21-16:23",
        ),
        # aliases, the call form of registration, subscripted tangents, a primal that is
        # not unpacked, a jnp call; one tangent is already checked; `import jax as J` is reused
        Flag("""
            from equinox import filter_custom_jvp as fcj
            import jax as J

            def _f(x, y, *, scale):
                return scale * x * y

            f = fcj(_f)

            def f_jvp(p, t, *, scale):
                x, y = p
                ty = t[1]
                tx = t[0]
                out_t = J.numpy.sum(tx)
                if ty is not None:
                    out_t = out_t + ty
                return f(x, y, scale=scale), out_t

            f.def_jvp(f_jvp)
        """, fixed="""
            from equinox import filter_custom_jvp as fcj
            import jax as J

            def _f(x, y, *, scale):
                return scale * x * y

            f = fcj(_f)

            def f_jvp(p, t, *, scale):
                x, y = p
                ty = t[1]
                tx = t[0]
                tx = J.numpy.zeros_like(x) if tx is None else tx
                out_t = J.numpy.sum(tx)
                if ty is not None:
                    out_t = out_t + ty
                return f(x, y, scale=scale), out_t

            f.def_jvp(f_jvp)
        """,
            message="tangent `tx` of the `f.def_jvp` rule is used as an array",
            span="13:25-13:27",
        ),
        # deprecated `.defjvp`: renamed, with the guard its zeros now need
        Flag("""
            import equinox as eqx
            import jax.numpy as np

            @eqx.filter_custom_jvp
            def cube(x):
                return x ** 3

            @cube.defjvp
            def cube_jvp(primals, tangents):
                x, = primals
                t, = tangents
                return cube(x), 3 * np.square(x) * t
        """, fixed="""
            import equinox as eqx
            import jax.numpy as np

            @eqx.filter_custom_jvp
            def cube(x):
                return x ** 3

            @cube.def_jvp
            def cube_jvp(primals, tangents):
                x, = primals
                t, = tangents
                t = np.zeros_like(x) if t is None else t
                return cube(x), 3 * np.square(x) * t
        """,
            message="`cube.defjvp` is deprecated",
            span="8:7-8:13",
        ),
        # `.defjvp` whose tangents escape into jax.jvp: reported, no fix
        Flag("""
            import equinox as eqx
            import jax

            @eqx.filter_custom_jvp
            def call(x, *, fn):
                return fn(x)

            @call.defjvp
            def call_jvp(primals, tangents, *, fn):
                return jax.jvp(fn, primals, tangents)
        """, span="8:7-8:13",
        ),
        # every use checked: by an early guard, a conditional expression, an `if`, `and`
        Pass("""
            import equinox as eqx
            import jax.numpy as jnp

            @eqx.filter_custom_jvp
            def f(x, y, z, w):
                return x * y * z * w

            @f.def_jvp
            def f_jvp(primals, tangents):
                x, y, z, w = primals
                tx, ty, tz, tw = tangents
                tx = jnp.zeros_like(x) if tx is None else tx
                out = tx * y * z * w
                out = out + (0.0 if ty is None else x * ty * z * w)
                if tz is not None:
                    out = out + x * y * tz * w
                if tw is None:
                    return f(x, y, z, w), out
                return f(x, y, z, w), out + x * y * z * tw
        """
        ),
        # jax.custom_jvp tangents are never None; a filter_custom_jvp whose rule passes the
        # tangents on whole; a same-named method that is not Equinox's
        Pass("""
            import equinox as eqx
            import jax

            @jax.custom_jvp
            def g(x):
                return x ** 2

            @g.defjvp
            def g_jvp(primals, tangents):
                x, = primals
                t, = tangents
                return g(x), 2 * x * t

            @eqx.filter_custom_jvp
            def h(m, x):
                return m(x)

            @h.def_jvp
            def h_jvp(primals, tangents):
                return eqx.filter_jvp(lambda m, x: m(x), primals, tangents)

            class Thing:
                def def_jvp(self, fn):
                    return fn

            thing = Thing()

            @thing.def_jvp
            def other(primals, tangents):
                a, = tangents
                return a * 2
        """
        ),
    )


@dataclasses.dataclass
class _Analysis:
    """The tangents of one rule that are used unchecked, and whether tangents escape."""

    rule: cst.FunctionDef
    facts: Facts
    local: dict[str, tuple[Definition, ...]]  # what the rule's body defines
    inside: Site                               # a place in the rule's body
    primals: str
    tangents: dict[str, _Tangent]
    unchecked: dict[str, cst.Name]
    escapes: bool

    def guardable(self) -> bool:
        return isinstance(self.rule.body, cst.IndentedBlock) and all(
            t.statement is not None for t in self.tangents.values())

    def primal(self, tangent: _Tangent) -> str:
        """How the guard spells the primal of a tangent: its unpacked name, else `primals[i]`."""
        at = tangent.definition.site
        for definitions in self.local.values():
            before = [d for d in definitions if not self.facts.precedes(at, d.site)]
            if before:
                extracted = _extracted(before[-1], self.primals)
                if extracted is not None and extracted[0] == tangent.index:
                    return before[-1].name
        return self.primals + "".join(f"[{i}]" for i in tangent.index)


def _extracted(definition: Definition, source: str) -> tuple[tuple[int, ...], cst.Name] | None:
    """For a definition that takes one item out of `source`: its index there, and the `source` name."""
    value: cst.BaseExpression
    path: tuple[int, ...]
    if definition.value is not None:
        value, path = definition.value, ()
    elif definition.unpacked is not None:
        value, path = definition.unpacked
    else:
        return None
    if isinstance(value, (cst.Tuple, cst.List)) and path and path[0] < len(value.elements):
        value, path = value.elements[path[0]].value, path[1:]
    index = (literals.integer(value.slice[0].slice.value) if isinstance(value, cst.Subscript) and len(value.slice) == 1
             and isinstance(value.slice[0].slice, cst.Index) else None)
    if index is not None and isinstance(value, cst.Subscript):
        path = (index, *path)
        value = value.value
    if isinstance(value, cst.Name) and value.value == source and path:
        return path, value
    return None


def _top_statement(rule: cst.FunctionDef, node: cst.CSTNode) -> cst.BaseStatement | None:
    if not isinstance(rule.body, cst.IndentedBlock):
        return None
    for statement in rule.body.body:
        if isinstance(statement, cst.SimpleStatementLine) and any(small is node for small in statement.body):
            return statement
    return None


def _none_checked(expression: cst.CSTNode) -> dict[int, str]:
    """Names compared with `is None` / `is not None` in an expression (by node id)."""
    found: dict[int, str] = {}
    stack = [expression]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1 and isinstance(
                node.comparisons[0].operator, (cst.Is, cst.IsNot)):
            sides = [node.left, node.comparisons[0].comparator]
            if any(isinstance(s, cst.Name) and s.value == "None" for s in sides):
                found.update((id(s), s.value) for s in sides if isinstance(s, cst.Name) and s.value != "None")
        elif not isinstance(node, (cst.Lambda, cst.FunctionDef)):
            stack.extend(node.children)
    return found


class _TangentUses:
    """Walks one rule body in order: which raw tangents reach arithmetic unchecked.
    (The visitor methods; `_tangent_visitor` makes it a LibCST visitor when first used.)"""

    def __init__(self, owner: UncheckedNoneTangent, inside: Site, unpacks: dict[int, set[str]],
                 sources: set[int], tangents: str) -> None:
        super().__init__()
        self.facts, self.scope = owner.facts, inside.scope
        self.unpacks, self.sources, self.tangents = unpacks, sources, tangents
        self.raw: set[str] = set()           # unpacked tangents not yet checked or rebound
        self.guards: list[set[str]] = []     # names checked by the conditions around this point
        self.accounted: set[int] = set()     # names whose use was classified already
        self.unchecked: dict[str, cst.Name] = {}
        self.escapes = False                 # a tangent is used in some other way

    def _guarded(self, name: str) -> bool:
        return any(name in guard for guard in self.guards)

    def _use(self, expression: cst.BaseExpression) -> None:
        if isinstance(expression, cst.Name) and expression.value in self.raw:
            self.accounted.add(id(expression))
            if not self._guarded(expression.value):
                self.unchecked.setdefault(expression.value, expression)

    def _push(self, expression: cst.CSTNode) -> None:
        checked = _none_checked(expression)
        self.accounted.update(checked)
        self.guards.append(set(checked.values()))

    def _targets(self, target: cst.BaseExpression) -> set[str]:
        names = set()
        stack: list[cst.CSTNode] = [target]
        while stack:
            node = stack.pop()
            if isinstance(node, cst.Name):
                names.add(node.value)
                self.accounted.add(id(node))
            elif isinstance(node, (cst.Tuple, cst.List, cst.StarredElement, cst.Element)):
                stack.extend(node.children)
        return names

    def _nested(self, node: cst.CSTNode) -> bool:
        watched = self.raw | {self.tangents}
        stack = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, cst.Name) and current.value in watched:
                self.escapes = True
                return False
            stack.extend(current.children)
        return False

    visit_FunctionDef = visit_Lambda = visit_ClassDef = _nested

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._targets(target.target)

    def leave_Assign(self, node: cst.Assign) -> None:
        if id(node) in self.unpacks:
            self.raw |= self.unpacks[id(node)]
            return
        for target in node.targets:
            self.raw -= self._targets(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self.raw -= self._targets(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._use(node.target)
        self._use(node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self.raw -= self._targets(node.target)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self._use(node.left)
        self._use(node.right)

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if not isinstance(node.operator, cst.Not):
            self._use(node.expression)

    def visit_Call(self, node: cst.Call) -> None:
        qualname = self.facts.qualname(node.func, self.scope) or ""
        if qualname.startswith(ARRAY_FUNCTIONS):
            for arg in node.args:
                self._use(arg.value)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.accounted.update(_none_checked(node))

    def visit_If(self, node: cst.If) -> None:
        self._push(node.test)

    def leave_If(self, node: cst.If) -> None:
        self.raw -= self.guards.pop()  # after `if t is None: ...` the code has dealt with it

    visit_While = visit_If
    leave_While = leave_If

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._push(node.test)

    def leave_IfExp(self, node: cst.IfExp) -> None:
        self.guards.pop()

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._push(node.left)

    def leave_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self.guards.pop()

    def leave_Assert(self, node: cst.Assert) -> None:
        self.raw -= set(_none_checked(node.test).values())

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) in self.accounted:
            return
        if ((node.value in self.raw and not self._guarded(node.value))
                or (node.value == self.tangents and id(node) not in self.sources)):
            self.escapes = True


@functools.cache
def _tangent_visitor() -> type:
    """Built on first use: importing the rule must not load LibCST (see odelint.engine.deferred)."""
    return type("TangentVisitor", (_TangentUses, cst.CSTVisitor), {})
