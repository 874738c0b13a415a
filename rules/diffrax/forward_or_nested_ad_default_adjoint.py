"""ODL804: forward-mode or nested differentiation through `diffeqsolve`'s default adjoint."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import FORWARD, REVERSE, Needs, Site, keyword_arg, literals, source_of
from odelint.api.finding import Edits, Fix, Replace, Safety
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Setting, Solve, api

_CUSTOM_VJP = "`TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.`"
_WHILE_LOOP = ("`ValueError: Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
               "with dynamic start/stop values.`")


class ForwardOrNestedAdDefaultAdjoint(Rule):
    """Forward-mode or nested differentiation through a solve with the default adjoint.

    ## What it does
    Flags `diffrax.diffeqsolve` in code of this file that runs under
    - forward mode (`jax.jacfwd`, `jax.jvp`, `jax.linearize`, `eqx.filter_jvp`,
      `eqx.filter_jacfwd`, also inside a reverse-mode transform),
    - reverse mode twice (`jax.grad(jax.grad(f))`, a `jax.grad` inside a function that
      `jax.grad` differentiates),
    - forward over reverse (`jax.hessian`, `jax.jacfwd(jax.grad(f))`) with a Runge-Kutta
      solver whose stages run in the default scan (`Tsit5()`, `Dopri5()`, `Heun()`,
      `Kvaerno5()`, ...; not `scan_kind="bounded"`; `Euler()` has no stages and works),

    when the adjoint is the default `RecursiveCheckpointAdjoint()` (or `BacksolveAdjoint`,
    or another adjoint that is not `ForwardMode()`/`DirectAdjoint()`).

    ## Why is this bad?
    The default adjoint is a `jax.custom_vjp` around a `while_loop`: it supports one
    reverse-mode pass and nothing else. On jax 0.10.2 / diffrax 0.7.2:

        jax.jacfwd / jax.jvp / jax.linearize through the solve:
        TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.

        jax.grad(jax.grad(...)) through the solve:
        ValueError: Reverse-mode differentiation does not work for lax.while_loop or
        lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using
        fori_loop with static start/stop.

        jax.hessian with Tsit5() (any solver with a stage scan):
        TypeError: can't apply forward-mode autodiff (jvp) to a custom_vjp function.

    (diffrax#314, #332, #419, #465, #612.)

    ## Example
    ```python
    def final(a):
        return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, y0, args=a).ys[-1]
    jax.jacfwd(final)(1.0)
    ```

    ## Use instead
    ```python
    def final(a):
        return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, y0, args=a,
                                   adjoint=diffrax.ForwardMode()).ys[-1]
    ```
    For grad of grad use `adjoint=diffrax.DirectAdjoint()`; for `jax.hessian` build the
    solver with `scan_kind="bounded"` (`diffrax.Tsit5(scan_kind="bounded")`), as the
    Diffrax Hessian example does.

    ## Fix safety
    Unsafe, and only offered when every transform that reaches the solve is forward mode:
    `adjoint=diffrax.ForwardMode()` computes the same derivatives, but with a different
    memory and time profile, and it cannot be differentiated in reverse mode, which a
    caller in another file might do. Nested and forward-over-reverse cases get the recipe
    in the message: they need the adjoint and, for `hessian`, the solver changed.
    """

    code = "ODL804"
    name = "forward-or-nested-ad-default-adjoint"
    summary = "jacfwd/jvp/hessian/grad-of-grad through diffeqsolve with the default adjoint"
    triggers = tuple(("diffeqsolve", transform)
                     for transform in ("jacfwd", "jvp", "linearize", "hessian", "grad", "jacrev", "vjp"))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL804"

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    needs = Needs.differentiated_calls_to(DIFFEQSOLVE)

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        solve = Solve.of(self.facts, node, site)
        if solve is None:
            return
        stacks = self.facts.differentiation.modes(site)
        adjoint = solve.adjoint()
        if not stacks or adjoint.qualname is None or adjoint.qualname in api()["adjoints"]["forward_mode"]:
            return
        spelled = (f"the adjoint `{source_of(self.context.module, adjoint.call)}`" if adjoint.call is not None
                   else "the default adjoint `RecursiveCheckpointAdjoint()`")
        why = self.facts.differentiation.why_differentiated(site)
        for stack in sorted(stacks, key=_severity):
            problem = self._problem(stack, solve)
            if problem is None:
                continue
            how, error, remedy = problem
            fix = None
            if all(mode == FORWARD for s in stacks for mode in s):
                fix = self._forward_fix(solve, adjoint, site)
            self.report(node.func, f"`diffeqsolve` with {spelled} is differentiated {how} ({why}): JAX raises "
                                   f"{error}; {remedy}", fix=fix)
            return

    def _problem(self, stack: tuple[str, ...], solve: Solve) -> tuple[str, str, str] | None:
        """How this stack of transforms fails through the default adjoint: (how it is
        differentiated, the error, the remedy), or None when it works."""
        if stack[-1] == FORWARD:
            return ("in forward mode, which its custom_vjp does not support", _CUSTOM_VJP,
                    "pass `adjoint=diffrax.ForwardMode()`")
        if stack.count(REVERSE) >= 2:
            return "twice in reverse mode", _WHILE_LOOP, "pass `adjoint=diffrax.DirectAdjoint()`"
        solver = solve.solver()
        if (FORWARD in stack and solver.call is not None and solver.qualname in api()["solvers"]["staged"]
                and not _bounded(solver)):
            how = (f"forward over reverse (as `jax.hessian` does) with the solver "
                   f"`{source_of(self.context.module, solver.call)}`{solver.origin()}, whose default stage scan "
                   f"does not allow it")
            return how, _CUSTOM_VJP, "build the solver with `scan_kind=\"bounded\"`"
        return None

    def _forward_fix(self, solve: Solve, adjoint: Setting, site: Site) -> Fix | None:
        given = keyword_arg(solve.call, "adjoint")
        if adjoint.given and (given is None or not isinstance(given.value, cst.Call)):
            return None

        def build() -> Edits:
            reference, imports = self.facts.reference(api()["adjoints"]["forward_fix"], site)
            forward = cst.Call(reference)
            if given is not None:
                return Edits([Replace(given.value, forward)], imports)
            return Edits([Replace(solve.call, _with_keyword(solve.call, "adjoint", forward))], imports)

        return self.fix("Use `adjoint=diffrax.ForwardMode()` for forward-mode differentiation", build, safe=False)

    examples = (
        Flag("""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -a * y)

            def final(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]

            jax.jacfwd(final)(1.0)
        """, fixed="""
            import diffrax
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -a * y)

            def final(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a, adjoint=diffrax.ForwardMode()).ys[-1]

            jax.jacfwd(final)(1.0)
        """, unsafe=True,  # noqa: E501 (a line of the example's code)
            message="`diffeqsolve` with the default adjoint `RecursiveCheckpointAdjoint()` "
                    "is differentiated in forward mode", span="7:12-7:31"),
        # from-imports, jvp through a helper, an explicit BacksolveAdjoint replaced
        Flag("""
            from diffrax import diffeqsolve as solve, ODETerm, Euler, BacksolveAdjoint
            from jax import jvp

            def helper(a):
                return solve(ODETerm(lambda t, y, a: -a * y), Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                             adjoint=BacksolveAdjoint()).ys[-1]

            def final(a):
                return helper(a)

            jvp(final, (1.0,), (1.0,))
        """, fixed="""
            from diffrax import diffeqsolve as solve, ODETerm, Euler, BacksolveAdjoint
            from jax import jvp
            import diffrax

            def helper(a):
                return solve(ODETerm(lambda t, y, a: -a * y), Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                             adjoint=diffrax.ForwardMode()).ys[-1]

            def final(a):
                return helper(a)

            jvp(final, (1.0,), (1.0,))
        """, unsafe=True,
            message="`diffeqsolve` with the adjoint `BacksolveAdjoint()` is differentiated in forward mode",
                span="5:12-5:17"),
        # grad of grad: the recipe, no fix
        Flag("""
            import diffrax as dfx
            import jax

            def final(a):
                return dfx.diffeqsolve(dfx.ODETerm(lambda t, y, a: -a * y), dfx.Euler(), 0.0, 1.0, 0.1, 1.0,
                                       args=a).ys[-1]

            jax.grad(jax.grad(final))(1.0)
        """, message="twice in reverse mode", span="5:12-5:27"),
        # hessian with a staged solver; the same function also under jax.grad: no fix
        Flag("""
            import diffrax
            import jax

            def final(a):
                return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: -a * y), diffrax.Tsit5(), 0.0, 1.0, 0.1,
                                           1.0, args=a).ys[-1]

            jax.hessian(final)(1.0)
            jax.grad(final)(1.0)
        """, message="forward over reverse (as `jax.hessian` does) with the solver `diffrax.Tsit5()`",
            span="5:12-5:31"),
        # the adjoints that support these transforms, a bounded stage scan, Euler under
        # hessian, a single reverse pass, no differentiation
        Pass("""
            import diffrax
            import equinox as eqx
            import jax

            term = diffrax.ODETerm(lambda t, y, a: -a * y)

            def forward(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                                           adjoint=diffrax.ForwardMode()).ys[-1]

            def direct(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a,
                                           adjoint=diffrax.DirectAdjoint()).ys[-1]

            def bounded(a):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(scan_kind="bounded"), 0.0, 1.0, 0.1, 1.0,
                                           args=a).ys[-1]

            def euler(a):
                return diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]

            def once(a):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]

            jax.jacfwd(forward)(1.0)
            eqx.filter_jvp(forward, (1.0,), (1.0,))
            jax.grad(jax.grad(direct))(1.0)
            jax.hessian(bounded)(1.0)
            jax.hessian(euler)(1.0)
            jax.grad(once)(1.0)
            jax.jit(jax.vmap(once))(1.0)
            diffrax.diffeqsolve(term, diffrax.Euler(), 0.0, 1.0, 0.1, 1.0)
        """),
        # the solver is built by the caller and reaches the solve through a helper's parameter
        Flag("""
            import diffrax
            import jax
            import jax.numpy as jnp


            def vector_field(t, y, a):
                return -a * y


            def solve(a, solver):
                term = diffrax.ODETerm(vector_field)
                return diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]


            def final(a):
                return solve(a, diffrax.Tsit5())


            hess = jax.jacfwd(jax.jacrev(final))(1.0)
        """, message="with the solver `diffrax.Tsit5()` (passed as `solver` to `solve`), whose default stage scan",
            span="12:12-12:31"),
        Pass("""
            import diffrax
            import jax
            import jax.numpy as jnp


            def vector_field(t, y, a):
                return -a * y


            def solve(a, solver):
                term = diffrax.ODETerm(vector_field)
                return diffrax.diffeqsolve(term, solver, 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]


            def final(a):
                return solve(a, diffrax.Tsit5(scan_kind="bounded"))


            hess = jax.jacfwd(jax.jacrev(final))(1.0)
        """),
        # the Hessian is built in a helper around the function it is given
        Flag("""
            import diffrax
            import jax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, a: -a * y)


            def final(a):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(), 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]


            def hessian(f):
                return jax.jacfwd(jax.jacrev(f))


            hess = hessian(final)(1.0)
        """, message="with the solver `diffrax.Tsit5()`, whose default stage scan does not allow it (`final`, passed "
                    "as `f` to `hessian`, is differentiated by `jax.jacfwd`)", span="9:12-9:31"),
        Pass("""
            import diffrax
            import jax
            import jax.numpy as jnp

            term = diffrax.ODETerm(lambda t, y, a: -a * y)


            def final(a):
                return diffrax.diffeqsolve(term, diffrax.Tsit5(scan_kind="bounded"), 0.0, 1.0, 0.1, 1.0, args=a).ys[-1]


            def hessian(f):
                return jax.jacfwd(jax.jacrev(f))


            hess = hessian(final)(1.0)
        """),
    )


def _severity(stack: tuple[str, ...]) -> tuple[int, int, tuple[str, ...]]:
    """Forward-only stacks first (they carry the fix), then by length, for a stable report."""
    return (0 if all(mode == FORWARD for mode in stack) else 1, len(stack), stack)


def _bounded(solver: Setting) -> bool:
    scan_kind = solver.keyword("scan_kind")
    return isinstance(scan_kind, cst.SimpleString) and literals.string(scan_kind) == "bounded"


def _with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with `name=value` appended after its last argument."""
    args = list(call.args)
    new = cst.Arg(value, keyword=cst.Name(name), equal=cst.AssignEqual(
        whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")))
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        new = new.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=args[-2].comma if len(args) > 1 else cst.Comma(
            whitespace_after=cst.SimpleWhitespace(" ")))
    elif args:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, new])
