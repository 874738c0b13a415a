"""What a file must contain for a rule to fire, declared by the rule, evaluated by the engine.

A rule states its pre-check as data (`needs = Needs.calls_to(*names) & Needs.may_hold_modules()`)
instead of writing code over CPython's `ast`: the engine evaluates every enabled rule's
declaration on the one `Sketch` of the file (odelint.analysis.sketch) before any LibCST parse.
Each word of the vocabulary errs towards "maybe", like the Sketch: a declaration that does not
hold means the rule cannot report anything on the file (tests/test_gate.py lints every input
with and without it). What no word says plainly is a named fact of the Sketch
(odelint.analysis.sketch_facts), kept with the model and tested there, never in a rule.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch


@dataclasses.dataclass(frozen=True)
class Need:
    """One declaration: `holds(sketch)` says whether the file may let the rule fire.

    `costly` words follow values through the file (which functions are traced or
    differentiated, which values may be modules); `holds(sketch, settle=False)` takes them as
    "maybe", which the engine asks once the file is to be parsed for another rule anyway:
    then running the rule costs less than settling its declaration."""

    text: str
    test: Callable[[Sketch], bool] | None = dataclasses.field(default=None, compare=False, repr=False)
    costly: bool = False
    parts: tuple[Need, ...] = ()  # a combination: all of them (`every`) or any of them
    every: bool = False
    # `holds` as one closure over the parts' closures, made once: every file asks every
    # enabled rule's declaration, and walking the dataclasses with generators cost more than
    # most of the tests they lead to.
    _holds: Callable[[Sketch, bool], bool] = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_holds", self._evaluator())

    def holds(self, sketch: Sketch, settle: bool = True) -> bool:
        return self._holds(sketch, settle)

    def _evaluator(self) -> Callable[[Sketch, bool], bool]:
        test = self.test
        if test is not None:
            if self.costly:
                return lambda sketch, settle: test(sketch) if settle else True
            return lambda sketch, settle: test(sketch)
        parts = tuple(part._holds for part in self.parts)
        if self.every:
            def every(sketch: Sketch, settle: bool) -> bool:
                for part in parts:
                    if not part(sketch, settle):
                        return False
                return True
            return every

        def some(sketch: Sketch, settle: bool) -> bool:
            for part in parts:
                if part(sketch, settle):
                    return True
            return False
        return some

    @property
    def settles_cheaply(self) -> bool:
        """Does settling this declaration follow no values (no costly word in it)?"""
        return not self.costly and all(part.settles_cheaply for part in self.parts)

    def __and__(self, other: Need) -> Need:
        return Need(f"({self.text} & {other.text})", parts=(self, other), every=True)

    def __or__(self, other: Need) -> Need:
        return Need(f"({self.text} | {other.text})", parts=(self, other))

    def __str__(self) -> str:
        return self.text


class Needs:
    """The vocabulary of declarations."""

    @staticmethod
    def calls_to(*names: str, keywords: Iterable[str] = ()) -> Need:
        """A call that may be to one of these dotted names (given one of `keywords`, if any)."""
        wanted, given = tuple(sorted(names)), tuple(keywords)

        def test(sketch: Sketch) -> bool:
            calls = sketch.calls_to(wanted)
            return bool(calls) if not given else any(_has_keyword(call, given) for call in calls)

        suffix = f" with {'/'.join(given)}=" if given else ""
        return Need(f"calls_to({', '.join(wanted)}){suffix}", test)

    @staticmethod
    def configures(*transforms: str, keywords: Iterable[str]) -> Need:
        """A call giving one of `keywords` to one of these transforms, directly
        (`jax.jit(f, static_argnums=1)`) or through `functools.partial(jax.jit, ...)`."""
        wanted, given = frozenset(transforms), tuple(keywords)

        def test(sketch: Sketch) -> bool:
            from odelint.analysis.sketch_calls import configures

            return any(_has_keyword(call, given) and configures(sketch, call, wanted) for call in sketch.calls)

        return Need(f"configures({', '.join(sorted(wanted))}) with {'/'.join(given)}=", test)

    @staticmethod
    def method_calls(method: str, positional: int) -> Need:
        """A call `x.<method>(...)` with exactly `positional` plain positional arguments and no keyword."""
        def test(sketch: Sketch) -> bool:
            return any(isinstance(call.func, ast.Attribute) and call.func.attr == method
                       and len(call.args) == positional and not call.keywords
                       and not any(isinstance(arg, ast.Starred) for arg in call.args) for call in sketch.calls)

        return Need(f"method_calls({method}, {positional})", test)

    @staticmethod
    def refers_to(*names: str) -> Need:
        """A reference to one of these dotted names, or to something inside one."""
        wanted = tuple(sorted(names))
        return Need(f"refers_to({', '.join(wanted)})", lambda sketch: sketch.refers_to(*wanted))

    @staticmethod
    def any_of(needs: Iterable[Need]) -> Need:
        """At least one of these (none: never)."""
        found = tuple(needs)
        return Need(f"any_of({', '.join(map(str, found))})", parts=found)

    @staticmethod
    def mentions(name: str) -> Need:
        """A reference to exactly this dotted name."""
        return Need(f"mentions({name})", lambda sketch: sketch.mentions(name))

    @staticmethod
    def imports(name: str) -> Need:
        """An import statement that names `name`, or something inside it."""
        return Need(f"imports({name})", lambda sketch: sketch.imports(name))

    @staticmethod
    def imports_module(name: str, from_parent: bool) -> Need:
        """An import of the module `name` or of one inside it, or with `from_parent`, from its
        package (`from a import b` for `a.b`: where `b` lives on as an attribute, it is not the module)."""
        return Need(f"imports_module({name}{', from its package' if from_parent else ''})",
                    lambda sketch: sketch.imports_module(name, from_parent))

    @staticmethod
    def transforms_own_function(*names: str) -> Need:
        """One of these transforms applied to a function of the file, called (`jax.jit(loss)`,
        `jax.vmap(lambda x: ...)`) or as a decorator: not only to a value from elsewhere
        (`jax.vmap(self.layer)`, a module)."""
        wanted = frozenset(names)
        return Need(f"transforms_own_function({', '.join(sorted(wanted))})",
                    lambda sketch: sketch.reach.transforms_own_function(wanted), costly=True)

    @staticmethod
    def setting(name: str) -> Need:
        """The setting is on (`strict-key-reuse = true`, FileContext.options)."""
        return Need(f"setting({name})", lambda sketch: name in sketch.options)

    @staticmethod
    def may_hold_modules() -> Need:
        """A value of the file may be an Equinox module (Sketch.may_hold_modules)."""
        return Need("may_hold_modules()", lambda sketch: sketch.may_hold_modules(), costly=True)

    @staticmethod
    def transforms_get_invalid_module(*names: str) -> Need:
        """One of these transforms, applied to a function of the file, may get an Equinox module
        with a function or string leaf for a parameter it consumes (`Facts.module_received`)."""
        wanted = frozenset(names)
        return Need(f"transforms_get_invalid_module({', '.join(sorted(wanted))})",
                    lambda sketch: sketch.module_classes.transform_may_get(wanted), costly=True)

    @staticmethod
    def calls_given_invalid_module(*names: str) -> Need:
        """A call to one of these dotted names may be given an Equinox module with a function or
        string leaf (`module_with_invalid_leaf`)."""
        wanted = frozenset(names)
        return Need(f"calls_given_invalid_module({', '.join(sorted(wanted))})",
                    lambda sketch: sketch.module_classes.given_to(wanted), costly=True)

    @staticmethod
    def defines(name: str) -> Need:
        """A `def` (or method) of this name."""
        return Need(f"defines({name})", lambda sketch: name in sketch.defs)

    @staticmethod
    def array_item_stores() -> Need:
        """`x[i] = ...` or `x[i] += ...` where `x` may be a JAX array."""

        def test(sketch: Sketch) -> bool:
            return any(sketch.arrays.may_be_jax_array(store.value) for store in sketch.subscript_stores)

        return Need("array_item_stores()", test, costly=True)

    @staticmethod
    def differentiated_calls_to(*names: str) -> Need:
        """A call to one of these dotted names inside code that may run under differentiation."""
        wanted = frozenset(names)

        def test(sketch: Sketch) -> bool:
            return any(sketch.qualnames(node.func) & wanted
                       for node in sketch.nodes_in(sketch.differentiated_functions(), ast.Call))

        return Need(f"differentiated_calls_to({', '.join(sorted(wanted))})", test, costly=True)

    @staticmethod
    def fact(name: str) -> Need:
        """A named fact of the Sketch (odelint.analysis.sketch_facts.FACTS)."""
        def test(sketch: Sketch) -> bool:
            from odelint.analysis.sketch_facts import FACTS

            return FACTS[name](sketch)

        return Need(f"fact({name})", test, costly=True)


def _has_keyword(call: ast.Call, names: tuple[str, ...]) -> bool:
    return any(given.arg in names for given in call.keywords)
