"""ODL807: an `ODETerm` vector field returns a structure visibly different from `y0`'s."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Needs, Site, argument_at, text_of
from odelint.api.rule import Callees, Flag, Pass, Rule
from odelint.rules.diffrax.common import DIFFEQSOLVE, Solve, api, constructed

_ERROR = "ValueError: The vector field inside `ODETerm` must return a pytree with the same structure as `y0`."
_ARTICLE = {"list": "a list", "tuple": "a tuple", "dict": "a dict", "array": "an array"}


class VectorFieldStructureMismatch(Rule):
    """The vector field of an `ODETerm` returns a different pytree structure than `y0`.

    ## What it does
    For a `diffrax.diffeqsolve` whose `terms` is a `diffrax.ODETerm` built from a lambda or
    a function of this file, compares what every `return` of that vector field visibly
    builds (a `[...]` list, a `(...)` tuple, a `{...}` dict, or a JAX array from a
    `jnp`/`jax` call) with what `y0` visibly is, and flags a difference: a list or tuple
    returned while `y0` is an array, an array returned while `y0` is a list, a tuple
    returned for a list `y0`, and so on. A value the code does not show (a parameter, `-y`)
    is never guessed.

    ## Why is this bad?
    Diffrax evaluates the vector field once at `t0` and compares the pytree structure of
    its output with `y0`'s; a Python list of components is a different pytree from one
    array (two leaves against one), so the solve stops before the first step (diffrax
    0.7.2):

        ValueError: The vector field inside `ODETerm` must return a pytree with the same
        structure as `y0`.

    Older versions raised the misleading "`terms` must be a PyTree of `AbstractTerms`"
    (diffrax#538, #446, #681, #719, #116; the check and message came with PR#731).

    ## Example
    ```python
    def vector_field(t, y, args):
        x, v = y
        return [v, -x]

    diffrax.diffeqsolve(diffrax.ODETerm(vector_field), solver, 0.0, 1.0, 0.1, jnp.array([1.0, 0.0]))
    ```

    ## Use instead
    ```python
    def vector_field(t, y, args):
        x, v = y
        return jnp.stack([v, -x])
    ```
    or pass `y0` in the structure the vector field returns (`(jnp.array(1.0), jnp.array(0.0))`
    for a tuple).

    ## Fix safety
    No automatic fix: whether the state should be one array or a tuple of components is
    the author's choice, and either way both sides must change together.
    """

    code = "ODL807"
    name = "vector-field-structure-mismatch"
    summary = "An ODETerm vector field returns a pytree structure different from y0's"
    triggers = (("diffeqsolve", "ODETerm"),)
    fixtures = "tests/fixtures/ODL807"

    needs = Needs.calls_to(DIFFEQSOLVE)

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset({DIFFEQSOLVE}))

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        solve = Solve.of(self.facts, node, site)
        terms, y0 = (solve.argument("terms"), solve.argument("y0")) if solve is not None else (None, None)
        if terms is None or y0 is None:
            return
        wanted = self.facts.structure(y0.value, site)
        term = constructed(self.facts, terms.value, site)
        if wanted is None or term is None:
            return
        call, where = term
        if self.facts.qualname(call.func, where.scope) != api()["terms"]["ode"]:
            return
        field = argument_at(call, api()["terms"]["vector_field"], 0)
        function = self._function(field.value, where) if field is not None else None
        returned = self.facts.returned_structure(function) if function is not None else None
        if returned is None or returned == wanted:
            return
        spelled = text_of(y0.value, self.context.module)
        self.report(field.value, f"the vector field returns {_ARTICLE[returned]} while `y0` (`{spelled}`) is "  # type: ignore[union-attr]
                                 f"{_ARTICLE[wanted]}: diffrax raises `{_ERROR}`; return "
                                 f"{_ARTICLE[wanted]} (e.g. `jnp.stack([...])` for an array), or pass `y0` as "
                                 f"{_ARTICLE[returned]}")

    def _function(self, node: cst.BaseExpression, site: Site) -> cst.FunctionDef | cst.Lambda | None:
        """The lambda or function of this file the vector field is."""
        if isinstance(node, cst.Lambda):
            return node
        found = self.facts.definition(node, site) if isinstance(node, cst.Name) else None
        if found is not None and isinstance(found.value, cst.Lambda):
            return found.value
        return self.facts.callee(node, site.scope)

    examples = (
        Flag("""
            import diffrax
            import jax.numpy as jnp

            def oscillator(t, y, args):
                x, v = y
                return [v, -x]

            y0 = jnp.array([1.0, 0.0])
            sol = diffrax.diffeqsolve(diffrax.ODETerm(oscillator), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0)
        """, message="the vector field returns a list while `y0` (`y0`) is an array: diffrax raises "
                     "`ValueError: The vector field inside `ODETerm` must return a pytree with the same "
                     "structure as `y0`.`", span="9:43-9:53"),
        # the reverse, a lambda, a term built beforehand, keywords
        Flag("""
            import diffrax as dfx
            import jax.numpy as jnp

            term = dfx.ODETerm(lambda t, y, args: -jnp.asarray(y))
            sol = dfx.diffeqsolve(term, dfx.Euler(), t0=0.0, t1=1.0, dt0=0.1, y0=[1.0, 2.0])
        """, message="the vector field returns an array while `y0` (`[1.0, 2.0]`) is a list", span="4:20-4:54"),
        Flag("""
            from diffrax import diffeqsolve, ODETerm, Euler

            decay = lambda t, y, args: [-y[0], -y[1]]
            sol = diffeqsolve(ODETerm(decay), Euler(), 0.0, 1.0, 0.1, (1.0, 2.0))
        """, message="returns a list while `y0` (`(1.0, 2.0)`) is a tuple", span="4:27-4:32"),
        # matching structures, and values the code does not show
        Pass("""
            import diffrax
            import jax.numpy as jnp

            def oscillator(t, y, args):
                x, v = y
                return jnp.stack([v, -x])

            def pair(t, y, args):
                x, v = y
                return (v, -x)

            def unknown(t, y, args):
                return -y

            y0 = jnp.array([1.0, 0.0])
            diffrax.diffeqsolve(diffrax.ODETerm(oscillator), diffrax.Tsit5(), 0.0, 1.0, 0.1, y0)
            diffrax.diffeqsolve(diffrax.ODETerm(pair), diffrax.Tsit5(), 0.0, 1.0, 0.1, (1.0, 0.0))
            diffrax.diffeqsolve(diffrax.ODETerm(unknown), diffrax.Tsit5(), 0.0, 1.0, 0.1, [1.0, 0.0])
            diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, a: {"x": -y["x"]}), diffrax.Euler(), 0.0, 1.0, 0.1,
                                {"x": 1.0})

            def solve(field, y0):
                return diffrax.diffeqsolve(diffrax.ODETerm(field), diffrax.Euler(), 0.0, 1.0, 0.1, y0)
        """),
    )
