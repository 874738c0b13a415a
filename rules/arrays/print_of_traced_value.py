"""ODL703: `print` of a traced value inside traced code."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst
from odelint.analysis import Needs, Site, jax_api, source_of
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule
from odelint.rules.arrays.common import traced_triggers

DEBUG_PRINT = jax_api.name("debug_print")


class PrintOfTracedValue(Rule):
    """`print` shows a traced value inside traced code.

    ## What it does
    Flags a call of the builtin `print` inside traced code (a function jitted, vmapped
    or checkpointed in any spelling, a `lax` loop or branch body, a diffrax vector field,
    and what they call) when an argument, or a field of an f-string argument, derives
    from a traced argument. `print` of constants (the Equinox FAQ's "compiling now"
    probe), of static arguments or shapes, and `print` on the host are not flagged.

    ## Why is this bad?
    Python's `print` runs once, while JAX traces the function; it shows the abstract
    tracer, e.g. `JitTracer(~float32[])`, never a value, and prints nothing on later
    calls, which run the compiled code. No error is raised, so the log silently lies
    (jax-ml/jax#196, #1476, #4615, #19887; the FAQ entry of PR#13946).

    ## Example
    ```python
    @jax.jit
    def step(x):
        print("x is", x)
        print(f"x = {x:.3f}")
    ```

    ## Use instead
    ```python
        jax.debug.print("x is {}", x)
        jax.debug.print("x = {:.3f}", x)
    ```

    ## Fix safety
    Safe: `jax.debug.print` prints the same text with the runtime values, on every call.
    The fix is offered for positional arguments and f-strings whose fields have at most
    a plain format spec; string literals are written into the format string (braces
    escaped), every other argument becomes a `{}` field. `sep`, `end`, `file`, `flush`,
    `*args`, `!r` conversions and `{x=}` fields are only reported. The fix reuses the
    file's `jax` import and adds `import jax.debug` when there is none.
    """

    code = "ODL703"
    name = "print-of-traced-value"
    symptoms = ("Traced<",)  # `Traced<ShapedArray(float32[])>with<DynamicJaxprTrace...>` printed
    summary = "print of a traced value inside traced code"
    triggers = traced_triggers("print")
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL703"

    needs = Needs.fact("traced_print")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        builtin = type(node.func) is cst.Name and node.func.value == "print"
        if not builtin or self.facts.definitions("print", site):
            return
        for arg in node.args:
            traced = self.facts.traced_value(arg.value, site)
            if traced is not None:
                break
        else:
            return
        fix = None
        converted = _format_call(node.args)
        if converted is not None:
            fix = self.fix("Print at run time with `jax.debug.print`",
                           lambda: self._debug_print(node, *converted, site))
        text = source_of(self.context.module, arg.value)
        name = traced.parameter.name
        derives = (f" ({traced.via})" if traced.via else "") if text == name \
            else f" (`{text}` derives from `{name}`{traced.passed()})"
        self.report(node, f"`print` runs once, at trace time, and shows a tracer instead of the value: `{name}` is "
                          f"traced: {traced.reason}{derives}; use `jax.debug.print`", fix=fix)

    def _debug_print(self, node: cst.Call, template: str, values: list[cst.BaseExpression], site: Site) -> Edits:
        function, imports = self.facts.reference(DEBUG_PRINT, site)
        args = [cst.Arg(cst.SimpleString(template))] + [cst.Arg(value) for value in values]
        return Edits([Replace(node, cst.Call(function, args))], imports)

    examples = (
        Flag("""
            import jax

            @jax.jit
            def step(x):
                print("x is", x)
                return x * 2
        """, fixed="""
            import jax

            @jax.jit
            def step(x):
                jax.debug.print("x is {}", x)
                return x * 2
        """, message="`x` is traced: a parameter of `step`, traced by `jax.jit`", span="5:5-5:21"),
        # f-strings with format specs and literal braces; a lax.scan body; `jax` is imported for the fix
        Flag("""
            from jax import lax
            import jax.numpy as jnp

            def body(carry, x):
                print(f"{{step}} carry={carry:.3f}, x={x}", 'done')
                print(carry + x, "{raw}")
                return carry + x, None

            lax.scan(body, 0.0, jnp.ones(3))
        """, fixed="""
            from jax import lax
            import jax.numpy as jnp
            import jax.debug

            def body(carry, x):
                jax.debug.print("{{step}} carry={:.3f}, x={} done", carry, x)
                jax.debug.print("{} {{raw}}", carry + x)
                return carry + x, None

            lax.scan(body, 0.0, jnp.ones(3))
        """, count=2, span=("5:5-5:56", "6:5-6:30")),
        # `sep=`, `!r` and `{x=}` have no mechanical rewrite: reported only
        Flag("""
            import equinox as eqx
            import jax

            @eqx.filter_jit
            def f(x: jax.Array):
                print(x, sep=", ")
                print(f"{x!r}")
                print(f"{x=}")
        """, count=3, span=("6:5-6:23", "7:5-7:20", "8:5-8:19")),
        # constants (a compile probe), static arguments, shapes, host code, a local `print`
        Pass("""
            import functools
            import jax

            @functools.partial(jax.jit, static_argnums=1)
            def f(x, n):
                print("compiling f")
                print(n, x.shape, len(x))
                jax.debug.print("{}", x)
                return x

            def host(x):
                print(x)

            @jax.jit
            def g(x):
                print = lambda *a: None
                print(x)
        """),
    )


def _format_call(args: Sequence[cst.Arg]) -> tuple[str, list[cst.BaseExpression]] | None:
    """`print`'s arguments as a `jax.debug.print` format string literal and its values, or None."""
    pieces: list[str] = []
    values: list[cst.BaseExpression] = []
    for arg in args:
        if arg.keyword is not None or arg.star:
            return None
        value = arg.value
        if isinstance(value, cst.SimpleString):
            text = _plain_text(value)
            if text is None:
                return None
            pieces.append(text.replace("{", "{{").replace("}", "}}"))
        elif isinstance(value, cst.FormattedString):
            converted = _fstring(value, values)
            if converted is None:
                return None
            pieces.append(converted)
        else:
            pieces.append("{}")
            values.append(value)
    template = " ".join(pieces)
    for quote in ('"', "'"):
        if quote not in template and "\\" not in template and "\n" not in template:
            return quote + template + quote, values
    return None


def _plain_text(string: cst.SimpleString) -> str | None:
    """The text of a plain one-line string literal without escapes, else None."""
    if string.prefix or len(string.quote) != 1 or "\\" in string.value:
        return None
    return string.value[1:-1]


def _fstring(string: cst.FormattedString, values: list[cst.BaseExpression]) -> str | None:
    """An f-string's text with each field turned into a positional `{}` / `{:spec}` field."""
    if string.prefix.lower() != "f" or len(string.end) != 1:
        return None
    pieces = []
    for part in string.parts:
        if isinstance(part, cst.FormattedStringText):
            if "\\" in part.value:
                return None
            pieces.append(part.value)  # `{{`/`}}` escape braces in format strings too
            continue
        if not isinstance(part, cst.FormattedStringExpression) or part.conversion is not None or part.equal is not None:
            return None
        spec = part.format_spec or []
        texts = [piece for piece in spec if isinstance(piece, cst.FormattedStringText)]
        if len(texts) != len(spec):
            return None
        spec_text = "".join(piece.value for piece in texts)
        pieces.append("{" + (":" + spec_text if spec else "") + "}")
        values.append(part.expression)
    return "".join(pieces)
