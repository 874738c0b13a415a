"""ODL707: float64 requested while JAX runs in 32-bit mode, or x64 switched on too late."""

from __future__ import annotations

import dataclasses

import libcst as cst
from odelint.analysis import Kind, Needs, Site, argument_at, jax_api, keyword_arg, literals, method_call, source_of, x64
from odelint.api.rule import Flag, Pass, Rule

X64_FLAG = jax_api.name("x64_flag")
_WIDE_TYPES = jax_api.names("wide_dtypes")
_WIDE_NAMES = jax_api.names("wide_dtype_names")
# calling these makes a JAX array; `np.float64(x)` makes a NumPy scalar, 64-bit whatever JAX's mode
_WIDE_CONSTRUCTORS = jax_api.names("wide_constructors")
# `jax.enable_x64` is the 64-bit context manager of jax 0.10 (it left `jax.experimental`)
_SWITCHES = jax_api.names("x64_switches")
_CONFIG_UPDATE = jax_api.name("config_update")


@dataclasses.dataclass(frozen=True)
class _Seen:
    node: cst.Call
    site: Site


class Float64WithoutX64(Rule):
    """A 64-bit dtype is requested in a program that runs JAX in 32-bit mode.

    ## What it does
    Flags `dtype=jnp.float64` (or `np.float64`, `"float64"`, `complex128`) in a `jax.numpy` /
    `jax.random` call, `x.astype(jnp.float64)` on a JAX array and `jnp.float64(...)` in a
    file that never enables 64-bit mode (no `jax_enable_x64`, `JAX_ENABLE_X64` or
    `jax.enable_x64` / `jax.experimental.enable_x64` anywhere in it) and that the project does
    not run in 64-bit mode: x64 switched on in a `conftest.py` above the file, in the
    `__init__.py` of a package the file belongs to, in an entry module that imports the file
    (directly or through other project files: a `__main__.py`, a script with an
    `if __name__ == "__main__":` block or one that switches x64 on as it is imported, such as
    `train.py`, in the file's folder or a folder above it; or a module of pyproject.toml's
    `[project.scripts]`), or (for tests) `JAX_ENABLE_X64=1` in
    pytest's `env` settings (pyproject.toml, pytest.ini, tox.ini, setup.cfg). NumPy's own
    `np.float64(x)` is a 64-bit NumPy scalar and is not flagged. Also flags
    `jax.config.update("jax_enable_x64", True)` placed after code of the same block (the
    module's top level, or one function body) that already created JAX arrays, unless the
    same block switches it off again later (a deliberate 64-bit section after a 32-bit run).

    ## Why is this bad?
    Without `jax_enable_x64`, JAX truncates every 64-bit request to 32 bits, with only a
    warning: "Explicitly requested dtype float64 requested in asarray is not available, and
    will be truncated to dtype float32". Arrays created before the flag is switched on stay
    32-bit. Results silently lose half their digits: a finite difference of `exp` at 0 with
    step 1e-7 gives 1.19 instead of 1.0, and diffrax solves take tiny steps or produce NaN
    gradients (jax#652, #470, #1333; diffrax#523; the first entry of the Diffrax FAQ).

    ## Example
    ```python
    import jax.numpy as jnp

    x = jnp.linspace(0.0, 1.0, 100, dtype=jnp.float64)
    ```

    ## Use instead
    ```python
    import jax
    jax.config.update("jax_enable_x64", True)  # first, before any array exists

    import jax.numpy as jnp

    x = jnp.linspace(0.0, 1.0, 100, dtype=jnp.float64)
    ```

    ## Fix safety
    No fix: switching x64 on changes every default dtype in the program (and a library must
    leave it to its users), so only the author can decide where it goes.
    """

    code = "ODL707"
    name = "float64-without-x64"
    symptoms = ("dtype float32", "dtype('float32')", "dtype=float32")  # the warning, a shown dtype, an array's repr
    summary = "float64 requested without jax_enable_x64, or x64 enabled after arrays were created"
    triggers = (("float64",), ("complex128",), (X64_FLAG,))
    fixtures = "tests/fixtures/ODL707"

    needs = Needs.fact("float64_without_x64")

    def __init__(self, context) -> None:
        super().__init__(context)
        self._requests: list[tuple[_Seen, cst.CSTNode]] = []  # (the call, the 64-bit dtype it names)
        self._created: list[_Seen] = []                      # calls that create arrays
        self._switches: list[_Seen] = []                     # `jax.config.update(x64, True)`
        self._switch_offs: list[_Seen] = []                  # `jax.config.update(x64, False)`
        self._mentioned = False                              # the file names `jax_enable_x64` at all

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        qualname = self.facts.qualname(node.func, site.scope)
        if qualname in _SWITCHES:
            self._mentioned = True
            if qualname == _CONFIG_UPDATE and _names_x64(node):
                (self._switches if _enables_x64(node) else self._switch_offs).append(_Seen(node, site))
            return
        wide = None
        if qualname in _WIDE_CONSTRUCTORS:
            wide = node.func
        elif qualname is not None and jax_api.returns_array(qualname):
            dtype = keyword_arg(node, "dtype")
            wide = dtype.value if dtype is not None and self._is_wide(dtype.value, site) else None
        else:
            receiver = method_call(node, "astype")
            dtype = argument_at(node, "dtype", 0) if receiver is not None else None  # most calls: no `.astype`
            if (receiver is not None and dtype is not None and self._is_wide(dtype.value, site)
                    and self.facts.kind(receiver, site) is Kind.ARRAY):
                wide = dtype.value
        if wide is not None:
            self._requests.append((_Seen(node, site), wide))
        if qualname is not None and jax_api.returns_array(qualname):
            self._created.append(_Seen(node, site))

    def visit_SimpleString(self, node: cst.SimpleString, site: Site) -> None:
        value = literals.string(node)
        if value is not None and value.lower() == X64_FLAG:
            self._mentioned = True

    @classmethod
    def attributes(cls) -> frozenset[str]:
        return frozenset({X64_FLAG})

    def visit_Attribute(self, node: cst.Attribute, site: Site) -> None:
        if node.attr.value == X64_FLAG:  # jax.config.jax_enable_x64 = True
            self._mentioned = True

    def finish(self) -> None:
        module = self.context.module
        if not self._mentioned and self._requests and x64.enabled_for(self.context.path) is None:
            for seen, wide in self._requests:
                self.report(wide, f"`{source_of(module, wide)}` is requested in a call of "
                                  f"`{source_of(module, seen.node.func)}` but nothing in this file enables 64-bit "
                                  f"mode: unless the program calls `jax.config.update(\"{X64_FLAG}\", True)` before "
                                  "any array exists, JAX silently truncates it to 32 bits")
        for switch in self._switches:
            earlier = [c for c in self._created if self.facts.precedes(c.site, switch.site)]
            if earlier and not self._switched_off_after(switch):
                self.report(switch.node, f"64-bit mode is switched on after `{source_of(module, earlier[0].node)}` "
                                         "created an array: arrays created before stay 32-bit; switch it on "
                                         "first, before any array exists")

    def _switched_off_after(self, switch: _Seen) -> bool:
        """A later switch-off in the same block makes a 64-bit section: the arrays before it
        are meant to be 32-bit (a test comparing both modes)."""
        return any(self.facts.precedes(switch.site, off.site) for off in self._switch_offs)

    def _is_wide(self, node: cst.BaseExpression, site: Site) -> bool:
        if isinstance(node, cst.SimpleString):
            return literals.string(node) in _WIDE_NAMES
        return self.facts.qualname(node, site.scope) in _WIDE_TYPES

    examples = (
        Flag("""
            import jax.numpy as jnp
            import numpy as np

            x = jnp.linspace(0.0, 1.0, 100, dtype=jnp.float64)
            y = jnp.zeros(3, dtype="float64") + x.astype(np.float64)[:3]
        """, count=3,
             message="`jnp.float64` is requested in a call of `jnp.linspace` but nothing in this file enables 64-bit",
                 span=("4:39-4:50", "5:24-5:33", "5:46-5:56")),
        Flag("""
            import jax
            import jax.numpy as jnp

            def solve(y0):
                return jnp.float64(y0) * 2

            if __name__ == "__main__":
                print(solve(1.0))
        """, message="nothing in this file enables 64-bit mode", span="5:12-5:23"),
        Flag("""
            import jax
            import jax.numpy as jnp

            ts = jnp.linspace(0.0, 1.0, 11)
            jax.config.update("jax_enable_x64", True)
        """, message="64-bit mode is switched on after `jnp.linspace(0.0, 1.0, 11)` created an array", span="5:1-5:42"),
        # x64 enabled first, by the flag's environment variable, or in the entry point
        Pass("""
            import jax
            jax.config.update("jax_enable_x64", True)
            import jax.numpy as jnp

            x = jnp.linspace(0.0, 1.0, 100, dtype=jnp.float64)
        """),
        Pass("""
            import os
            os.environ["JAX_ENABLE_X64"] = "1"
            import jax.numpy as jnp

            x = jnp.ones(3, dtype=jnp.float64)
        """),
        # numpy's own float64; a key before the switch; an array made in another block first
        Pass("""
            import jax
            import jax.numpy as jnp
            import numpy as np

            key = jax.random.PRNGKey(0)
            jax.config.update("jax_enable_x64", True)
            reference = np.ones(3, dtype=np.float64).astype(np.float64)

            def widen(x):
                return jnp.asarray(x, dtype=jnp.float64)

            def main():
                jax.config.update("jax_enable_x64", True)
                return widen(1.0)
        """),
        # a 64-bit section after a 32-bit run, switched off again (blackjax tests comparing both modes)
        Pass("""
            import jax
            import jax.numpy as jnp

            def test_both_modes(run):
                result32 = run(jnp.zeros(3))
                try:
                    jax.config.update("jax_enable_x64", True)
                    result64 = run(jnp.zeros(3))
                finally:
                    jax.config.update("jax_enable_x64", False)
                return result32, result64
        """),
        # NumPy scalars made from JAX arrays (flax tests); x64 switched on by `jax.enable_x64` (blackjax)
        Pass("""
            import jax.numpy as jnp
            import numpy as np

            y = jnp.arange(3.0)
            expected = np.float64(y), np.complex128("1+1j")
        """),
        Pass("""
            import jax
            import jax.numpy as jnp

            def test_nextafter():
                with jax.enable_x64():
                    below = jnp.nextafter(jnp.float64(1.0), jnp.float64(0.0))
                    return jnp.zeros(3, dtype=jnp.float64), below
        """),
    )


def _names_x64(call: cst.Call) -> bool:
    """`jax.config.update("jax_enable_x64", ...)`."""
    name = argument_at(call, None, 0)
    return name is not None and isinstance(name.value, cst.SimpleString) and literals.string(name.value) == X64_FLAG


def _enables_x64(call: cst.Call) -> bool:
    """`jax.config.update("jax_enable_x64", value)` with any value but a literal False/0."""
    value = argument_at(call, None, 1)
    return not (value is not None and isinstance(value.value, (cst.Name, cst.Integer))
                and getattr(value.value, "value", None) in ("False", "0"))
