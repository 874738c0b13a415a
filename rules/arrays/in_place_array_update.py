"""ODL701: item assignment into a JAX array (`x[i] = v`, `x[i] += v`)."""

from __future__ import annotations

from typing import TypeGuard

import libcst as cst
from odelint.analysis import Needs, Site, is_jax_array, rebindable_here, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule

# augmented operator (LibCST's class name) -> the `.at[...]` method that does the same, and
# whether the value is negated
_AT_METHODS: dict[str, tuple[str, bool]] = {
    "AddAssign": ("add", False), "SubtractAssign": ("add", True), "MultiplyAssign": ("multiply", False),
    "DivideAssign": ("divide", False), "PowerAssign": ("power", False),
}
ERROR = "TypeError: JAX arrays are immutable and do not support in-place item assignment"


class InPlaceArrayUpdate(Rule):
    """An element of a JAX array is assigned in place.

    ## What it does
    Flags `x[i] = v` and `x[i] += v` (any augmented operator, any index or slice) where `x`
    is known to be a JAX array: built by `jnp.*`/`jax.random.*`/`jax.nn.*`, arithmetic on
    such arrays, `.at[...]` updates, annotated `jax.Array`/`Float[Array, ...]`, or passed
    one by every call of this file. NumPy arrays and lists, which do support item
    assignment, are not flagged.

    ## Why is this bad?
    JAX arrays are immutable, eagerly and under `jit` alike:

        TypeError: JAX arrays are immutable and do not support in-place item assignment.
        Instead of x[idx] = y, use x = x.at[idx].set(y) or another .at[] method

    (jax-ml/jax#101, #2219, #7032, PR#24315 which improved the message.)

    ## Example
    ```python
    x = jnp.zeros(3)
    x[0] = 1.0
    x[1:] += 2.0
    ```

    ## Use instead
    ```python
    x = jnp.zeros(3)
    x = x.at[0].set(1.0)
    x = x.at[1:].add(2.0)
    ```

    ## Fix safety
    Safe: `x[i] = v` always raises on a JAX array, and `x = x.at[i].set(v)` (`.add`,
    `.multiply`, `.divide`, `.power`, and `.add(-v)` for `-=`) computes what the in-place
    update meant. No other name can have seen the old array change, since JAX arrays
    never change. The fix is offered when `x` is a plain name bound in the same function
    (rebinding a name from an enclosing scope would make it local); `//=`, `%=` and the
    bitwise operators have no `.at` method and are only reported.
    """

    code = "ODL701"
    name = "in-place-array-update"
    symptoms = ("JAX arrays are immutable", "does not support item assignment")
    summary = "An element of a JAX array is assigned in place"
    triggers = (("jax", "]"),)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL701"

    needs = Needs.array_item_stores()

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        for target in node.targets:
            item = target.target
            if type(item) is cst.Subscript and self._array_item(item, site):
                fixable = len(node.targets) == 1 and rebindable_here(self.facts, item.value, site)
                self._flag(node, item, site, "set", node.value, fixable)

    def visit_AugAssign(self, node: cst.AugAssign, site: Site) -> None:
        target = node.target
        if not isinstance(target, cst.Subscript) or not self._array_item(target, site):
            return
        method, negate = _AT_METHODS.get(type(node.operator).__name__, (None, False))
        value = _negated(node.value) if negate else node.value
        self._flag(node, target, site, method, value,
                   method is not None and rebindable_here(self.facts, target.value, site))

    def _array_item(self, target: cst.BaseExpression, site: Site) -> TypeGuard[cst.Subscript]:
        return isinstance(target, cst.Subscript) and is_jax_array(self.facts, target.value, site)

    def _flag(self, node: cst.Assign | cst.AugAssign, target: cst.Subscript, site: Site, method: str | None,
              value: cst.BaseExpression, fixable: bool) -> None:
        array = source_of(self.context.module, target.value)
        index = source_of(self.context.module, cst.Subscript(cst.Name("_"), target.slice))[1:]
        use = f"`{array} = {array}.at{index}.{method}(...)`" if method else "an `.at[...]` update"
        fix = None
        if fixable and method is not None and isinstance(target.value, cst.Name):
            update = cst.Call(cst.Attribute(cst.Subscript(cst.Attribute(target.value, cst.Name("at")), target.slice),
                                            cst.Name(method)), [cst.Arg(value)])
            new = cst.Assign([cst.AssignTarget(target.value)], update)
            fix = self.fix(f"Rewrite as `{array} = {array}.at{index}.{method}(...)`",
                           lambda: Edits([Replace(node, new)]))
        self.report(target, f"`{array}` is a JAX array and cannot be assigned in place ({ERROR}): use {use}",
                    fix=fix)

    examples = (
        Flag("""
            import jax.numpy as jnp

            x = jnp.zeros(3)
            x[0] = 1.0
        """, fixed="""
            import jax.numpy as jnp

            x = jnp.zeros(3)
            x = x.at[0].set(1.0)
        """, message="`x` is a JAX array and cannot be assigned in place", span="4:1-4:5"),
        # every augmented operator with an `.at` method; `-=` adds the negated value
        Flag("""
            import jax
            from jax import numpy as np2

            def step(key, n):
                x = jax.random.normal(key, (n, n))
                x[:, 0] += 1.0
                x[1] -= y + 2
                x[2, 2] *= 3.0
                x[0, 1] /= 2.0
                x[1, 1] **= 2
                x[0] //= 2
                return x
        """, fixed="""
            import jax
            from jax import numpy as np2

            def step(key, n):
                x = jax.random.normal(key, (n, n))
                x = x.at[:, 0].add(1.0)
                x = x.at[1].add(-(y + 2))
                x = x.at[2, 2].multiply(3.0)
                x = x.at[0, 1].divide(2.0)
                x = x.at[1, 1].power(2)
                x[0] //= 2
                return x
        """, count=6, span=("6:5-6:12", "7:5-7:9", "8:5-8:12", "9:5-9:12", "10:5-10:12", "11:5-11:9")),
        # an annotated parameter; an array from a closure is reported but not rebound (it would become local)
        Flag("""
            import jax
            import jax.numpy as jnp

            buffer = jnp.ones(4)

            def write(a: jax.Array, i):
                a[i] = 0.0
                def inner():
                    buffer[i] = a[i]
                return a
        """, fixed="""
            import jax
            import jax.numpy as jnp

            buffer = jnp.ones(4)

            def write(a: jax.Array, i):
                a = a.at[i].set(0.0)
                def inner():
                    buffer[i] = a[i]
                return a
        """, count=2, span=("7:5-7:9", "9:9-9:18")),
        # NumPy arrays, lists, dicts, `.at` updates, an annotated NumPy array
        Pass("""
            import numpy as np
            import jax.numpy as jnp
            from jaxtyping import Float

            x = np.zeros(3)
            x[0] = 1.0
            rows = [1, 2]
            rows[0] += 1
            y = jnp.zeros(3)
            y = y.at[0].set(1.0)
            y += 1.0
            d = {}
            d["a"] = y

            def f(a: np.ndarray, b: Float[np.ndarray, "n"]):
                a[0] = 1.0
                b[0] = 2.0
        """),
        # a tutorial that shows the error: the assignment is caught and its message printed
        Pass("""
            import jax.numpy as jnp

            jax_array = jnp.zeros((3, 3), dtype=jnp.float32)

            # In place update of JAX's array will yield an error!
            try:
                jax_array[1, :] = 1.0
            except Exception as e:
                print("Exception {}".format(e))
        """),
    )


def _negated(value: cst.BaseExpression) -> cst.BaseExpression:
    """`-v`, parenthesised when `v` is a compound expression."""
    if isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber)):
        return cst.UnaryOperation(cst.Minus(), value)
    return cst.UnaryOperation(cst.Minus(), value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
