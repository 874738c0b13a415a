"""ODL905: `eqx.static_field()`, deprecated in favour of `eqx.field(static=True)`."""

from __future__ import annotations

from odelint.api.finding import Safety
from odelint.api.rule import Flag, Pass
from odelint.rules.deprecated.common import DeprecatedApiRule


class StaticField(DeprecatedApiRule):
    """A module field is declared with the deprecated `eqx.static_field()`.

    ## What it does
    Flags calls of `equinox.static_field` (through any alias: `eqx.static_field()`,
    `from equinox import static_field`).

    ## Why is this bad?
    Equinox deprecated it in favour of `eqx.field(static=True)` (equinox#390); it still
    works on Equinox 0.13.8 but warns every time a class using it is defined:

        UserWarning: `equinox.static_field` is deprecated in favour of `equinox.field(static=True)`

    Libraries that run with warnings as errors broke on it (levanter#910, haliax#166), and
    a deprecated name is removed sooner or later. This rule flags a warning, not a crash:
    its fixture measures whether the warning is raised.

    ## Example
    ```python
    class Net(eqx.Module):
        width: int = eqx.static_field()
    ```

    ## Use instead
    ```python
    class Net(eqx.Module):
        width: int = eqx.field(static=True)
    ```

    ## Fix safety
    Safe: `static_field(**kwargs)` is implemented as `field(**kwargs, static=True)`; the
    fix writes exactly that, keeping the other arguments, reusing the file's alias of
    `equinox` and adding `import equinox as eqx` only when there is none (a
    `from equinox import static_field` is left in place: it still imports). A call that
    already passes `static=` (a TypeError today) is only reported.
    """

    code = "ODL905"
    name = "static-field"
    summary = "eqx.static_field() is deprecated: use eqx.field(static=True)"
    triggers = (("static_field",),)
    fix_safety = Safety.SAFE
    fixtures = "tests/fixtures/ODL905"

    examples = (
        Flag("""
            import equinox as eqx

            class Net(eqx.Module):
                width: int = eqx.static_field()
                act: object = eqx.static_field(default=None)
        """, fixed="""
            import equinox as eqx

            class Net(eqx.Module):
                width: int = eqx.field(static=True)
                act: object = eqx.field(default=None, static=True)
        """, count=2, message="`eqx.static_field()` is deprecated and warns: UserWarning",
            span=("4:18-4:34", "5:19-5:35")),
        Flag("""
            import equinox as eq

            class Net(eq.Module):
                names: tuple = eq.static_field(**{"default": ()})
        """, fixed="""
            import equinox as eq

            class Net(eq.Module):
                names: tuple = eq.field(**{"default": ()}, static=True)
        """, span="4:20-4:35"),
        # a from-import: `import equinox as eqx` is added for `eqx.field`
        Flag("""
            from equinox import Module, static_field

            class Net(Module):
                width: int = static_field()
        """, fixed="""
            from equinox import Module, static_field
            import equinox as eqx

            class Net(Module):
                width: int = eqx.field(static=True)
        """, span="4:18-4:30"),
        # the current spelling, dataclasses' field, a user's own static_field
        Pass("""
            import dataclasses
            import equinox as eqx

            def static_field():
                return dataclasses.field(default=0)

            class Net(eqx.Module):
                width: int = eqx.field(static=True)

            @dataclasses.dataclass
            class Config:
                depth: int = static_field()
        """),
    )
