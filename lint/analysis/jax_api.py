"""What odelint knows about the JAX stack's API, read from the data tables (odelint.analysis.tables).

`jax_api.toml` says which functions transform, trace, differentiate or call back,
and what calls return; `library_modules.toml` names the Equinox module classes of
the ecosystem's libraries and their leaves that are not arrays. Both are read once, on first
use, so linting a file that asks nothing pays nothing. No rule hard-codes this knowledge.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

from odelint.analysis import tables


@dataclasses.dataclass(frozen=True)
class Transform:
    """A function transform: `jax.jit(f)`, `eqx.filter_grad(f)`, used as a call or decorator."""

    qualname: str
    traces: bool = False                # runs `f` on abstract tracers (Python `if` fails)
    differentiates: str | None = None   # "reverse", "forward" or "forward+reverse"
    wrt: str | None = None              # "argnums", "first" or "all"
    filtered: bool = False              # an Equinox filter_* transform
    equinox: str | None = None          # the Equinox transform to use for modules
    static: tuple[str, ...] = ()        # keywords that mark arguments static
    calls_now: bool = False             # jvp/vjp/linearize: calls `f` at once
    gradient: str | None = None         # "all" (grad) or "second" (value_and_grad): where the gradient is

    @property
    def reverse(self) -> bool:
        return self.differentiates is not None and "reverse" in self.differentiates

    @property
    def forward(self) -> bool:
        return self.differentiates is not None and "forward" in self.differentiates


@dataclasses.dataclass(frozen=True)
class TracedBody:
    """A library function that traces the functions handed to it (`lax.scan(f, ...)`)."""

    qualname: str
    functions: tuple[int, ...] = ()
    lists: tuple[int, ...] = ()
    keywords: tuple[str, ...] = ()
    params: tuple[int, ...] | None = None  # None: every parameter is traced
    reverse: bool = True                   # reverse-mode differentiation through it works
    once: bool = False                     # runs the function once per call (a branch), not in a loop
    operands: tuple[int, ...] = ()         # the pytrees it carries or maps over (scan's init, xs)
    operand_keywords: tuple[str, ...] = ()
    operands_from: int | None = None       # the first of variadic operands (cond, switch)


@dataclasses.dataclass(frozen=True)
class Callback:
    qualname: str
    first_arg: int
    differentiable: bool
    error: str = ""              # what differentiating through it raises


@dataclasses.dataclass(frozen=True)
class LibraryModule:
    """An Equinox module class of a library, with its non-array leaves by field name."""

    qualname: str
    functions: tuple[str, ...] = ()
    scalars: tuple[str, ...] = ()
    modules: tuple[tuple[str, str], ...] = ()   # (field, class) ; class ends with [] for tuples


def _api() -> dict:
    return tables.read("jax_api.toml")


@functools.cache
def transforms() -> dict[str, Transform]:
    found = {}
    for qualname, row in _api()["transform"].items():
        found[qualname] = Transform(qualname, row.get("traces", False), row.get("differentiates"),
                                    row.get("wrt"), row.get("filtered", False), row.get("equinox"),
                                    tuple(row.get("static", ())), row.get("calls_now", False),
                                    row.get("gradient"))
    return found


def transform(qualname: str | None) -> Transform | None:
    return transforms().get(qualname or "")


@functools.cache
def traced_bodies() -> dict[str, TracedBody]:
    found = {}
    for qualname, row in _api()["traced_body"].items():
        params = row.get("params")
        found[qualname] = TracedBody(qualname, tuple(row.get("functions", ())), tuple(row.get("lists", ())),
                                     tuple(row.get("keywords", ())), tuple(params) if params is not None else None,
                                     row.get("reverse", True), row.get("once", False), tuple(row.get("operands", ())),
                                     tuple(row.get("operand_keywords", ())), row.get("operands_from"))
    return found


def traced_body(qualname: str | None) -> TracedBody | None:
    return traced_bodies().get(qualname or "")


@functools.cache
def tracing_calls() -> frozenset[str]:
    """The functions whose call traces a function it is given: tracing transforms (`jax.jit`,
    `jax.vmap`) and traced bodies (`jax.lax.scan`, a diffrax term)."""
    return frozenset(name for name, row in transforms().items() if row.traces) | frozenset(traced_bodies())


@functools.cache
def function_wrappers() -> frozenset[str]:
    """Transforms whose result is the function they wrap, called with the same parameters."""
    return frozenset(name for name, row in transforms().items() if not row.calls_now)


@functools.cache
def reverse_transforms() -> frozenset[str]:
    """The transforms that differentiate in reverse mode (`jax.grad`, `jax.vjp`, `eqx.filter_grad`)."""
    return frozenset(name for name, row in transforms().items() if row.reverse)


def canonical(qualname: str) -> str:
    """The name an old spelling stands for (`jax.util.partial` -> `functools.partial`), else itself."""
    aliases: dict[str, str] = _api()["aliases"]
    return aliases.get(qualname, qualname)


@functools.cache
def callbacks() -> dict[str, Callback]:
    return {name: Callback(name, row["first_arg"], row["differentiable"], row.get("error", ""))
            for name, row in _api()["callback"].items()}


def callback(qualname: str | None) -> Callback | None:
    return callbacks().get(qualname or "")


@functools.cache
def _returns() -> dict:
    return _api()["returns"]


def returns_key(qualname: str) -> bool:
    return qualname in _returns()["keys"]


@functools.lru_cache(maxsize=4096)  # a pure function of the table, asked for the same names again and again
def returns_array(qualname: str) -> bool:
    """Does calling `qualname` give a JAX array (jnp.*, jax.random.normal, jax.nn.relu, ...)?"""
    table = _returns()
    if qualname in table["arrays"]:
        return True
    if qualname in table["keys"] or any(qualname == n or qualname.startswith(n + ".") for n in table["not_arrays"]):
        return False
    module, _, name = qualname.rpartition(".")
    return module in table["array_modules"] and not name[:1].isupper()


def static_attribute(name: str) -> bool:
    """`x.shape`, `x.dtype`, ...: a static Python value even when `x` is traced."""
    return name in _returns()["static_attributes"]


def static_function(qualname: str | None) -> bool:
    return qualname in _returns()["static_functions"]


def at_update(method: str) -> bool:
    """Does `x.at[i].<method>(...)` return an updated copy of `x` (`set`, `add`, ...; not `get`)?"""
    return method in _returns()["at_updates"]


def filtered_tree_makers() -> tuple[str, ...]:
    """The calls a filtered tree (`Kind.FILTERED`: `None` where a module holds no array) comes
    from: `eqx.filter`, `eqx.partition`, and the filtered gradient transforms
    (`eqx.filter_grad(loss)(model)`)."""
    gradients = sorted(name for name, found in transforms().items() if found.filtered and found.gradient)
    return ("equinox.filter", "equinox.partition", *gradients)


def tree_maps() -> tuple[str, ...]:
    """`jax.tree_util.tree_map` and its spellings: a function mapped over several trees."""
    return tuple(_api()["trees"]["map"])


def tree_map(qualname: str | None) -> bool:
    return qualname in tree_maps()


def euclidean_norm(qualname: str | None) -> bool:
    """`jnp.linalg.norm` and friends: non-differentiable where their argument is zero."""
    return qualname in _api()["norms"]["euclidean"]


def square_root(qualname: str | None) -> bool:
    return qualname in _api()["norms"]["roots"]


def norm_functions() -> list[str]:
    """The Euclidean norms and square roots, whose derivative is 0/0 where the argument is zero."""
    return [*_api()["norms"]["euclidean"], *_api()["norms"]["roots"]]


def safe_norm() -> str:
    """The norm with a finite gradient at zero (`optax.safe_norm`)."""
    return str(_api()["norms"]["safe"])


def sums(qualname: str | None) -> bool:
    return qualname in _api()["norms"]["sums"]


def sum_method(name: str) -> bool:
    return name in _api()["norms"]["sum_methods"]


def squares(qualname: str | None) -> bool:
    return qualname in _api()["norms"]["squares"]


def annotation_kind(qualname: str | None) -> str | None:
    """'array', 'key' or 'callable' for an annotation's (outer) qualified name."""
    table = _returns()
    if qualname in table["key_annotations"]:
        return "key"
    if qualname in table["array_annotations"]:
        return "array"
    if qualname in table["callable_annotations"]:
        return "callable"
    return None


def _libraries() -> dict:
    return tables.read("library_modules.toml")


def is_library_module(qualname: str | None) -> bool:
    """Is `qualname` an Equinox module class of a known library (`equinox.nn.MLP`, `diffrax.Tsit5`)?"""
    if not qualname:
        return False
    table = _libraries()["libraries"]
    module, _, name = qualname.rpartition(".")
    return (module in table["prefixes"] and name[:1].isupper() and not name.startswith("_")
            and qualname not in table["not_modules"])


def library_prefixes() -> tuple[str, ...]:
    """The modules directly under which public CamelCase classes are Equinox modules."""
    return tuple(_libraries()["libraries"]["prefixes"])


@functools.cache
def library_module(qualname: str) -> LibraryModule | None:
    if not is_library_module(qualname):
        return None
    row = _libraries().get("module", {}).get(qualname, {})
    return LibraryModule(qualname, tuple(row.get("functions", ())), tuple(row.get("scalars", ())),
                         tuple(row.get("modules", {}).items()))


@functools.cache
def optax_stateless() -> frozenset[str]:
    """optax constructors whose `init` keeps no state per parameter."""
    return frozenset(_api()["optax"]["stateless"])


@functools.cache
def optax_need_params() -> frozenset[str]:
    """optax constructors (last name) whose `update` raises without `params`."""
    return frozenset(_api()["optax"]["need_params"])


_RANDOM = "jax.random."


def random_prefix() -> str:
    """The prefix of the functions that make keys and draw from them (`Callees(prefixes=...)`)."""
    return _RANDOM


def consumes_key(qualname: str | None) -> bool:
    """Does calling this `jax.random` function draw from (or split) the key it is given?"""
    return (qualname is not None and qualname.startswith(_RANDOM)
            and qualname not in _api()["keys"]["not_consuming"])


def makes_key(qualname: str | None) -> bool:
    """`jax.random.PRNGKey` / `jax.random.key`: a key from a seed."""
    return qualname in _api()["keys"]["constant_makers"]


def splits_key(qualname: str | None) -> bool:
    """`jax.random.split`: the key handed out as subkeys."""
    return qualname in _api()["keys"]["splitters"]


def derives_key(qualname: str | None) -> bool:
    """`jax.random.fold_in`: a new key from a key and data."""
    return qualname in _api()["keys"]["derivers"]


def switches_randomness_off(keyword: str, value: bool) -> bool:
    """Does `keyword=value` in a model call turn its dropout (its draws) off?"""
    return _api()["keys"]["inference_flags"].get(keyword) is value


def shape_position(qualname: str | None) -> int | None:
    """Where a `jax.random` sampler takes the shape of the numbers it makes (-1: only as
    `shape=`), or None for a function without one (`permutation`, `split`)."""
    position = _api()["keys"]["shape_positions"].get(qualname) if qualname is not None else None
    return position if isinstance(position, int) else None


@dataclasses.dataclass(frozen=True)
class Singular:
    """A function whose derivative is not finite at some inputs (`jnp.sqrt` at 0)."""

    qualname: str
    bad: tuple[tuple[float, float], ...]  # closed intervals of inputs with a non-finite derivative
    placeholder: float                  # an input where the derivative is finite
    arguments: tuple[int, ...] = (0,)   # where the singular inputs go
    exponent: int | None = None         # power: singular unless this is a whole number >= 0


def infinite(qualname: str | None) -> bool:
    """Is `qualname` an infinite constant (`jnp.inf`, `math.inf`)?"""
    return qualname in _api()["infinite"]["constants"]


@functools.cache
def singular_functions() -> dict[str, Singular]:
    return {name: Singular(name, tuple((lo, hi) for lo, hi in row["bad"]), row["placeholder"],
                           tuple(row.get("arguments", (0,))), row.get("exponent"))
            for name, row in _api()["singular"].items()}


def singular(qualname: str | None) -> Singular | None:
    return singular_functions().get(qualname or "")


DIVISION = Singular("/", ((0.0, 0.0),), 1.0, (1,))           # `a / x`: at x == 0
INFINITE_FACTOR = Singular("* inf", ((-math.inf, math.inf),), 1.0, (0,))  # `x * jnp.inf`: infinite slope everywhere
_FRACTIONAL_POWER = Singular("**", ((-math.inf, 0.0),), 1.0, (0,))
_NEGATIVE_POWER = Singular("**", ((0.0, 0.0),), 1.0, (0,))


def power_singular(value: float | None) -> Singular | None:
    """What a literal exponent makes singular: a fractional one x <= 0, a negative whole one
    x == 0; a whole number >= 0 or a variable exponent nothing (not flagged)."""
    if value is None or (value.is_integer() and value >= 0):
        return None
    return _NEGATIVE_POWER if value.is_integer() else _FRACTIONAL_POWER


def diffrax_api() -> dict[str, Any]:
    """diffrax_api.toml: diffrax's `diffeqsolve` defaults, solvers, controllers and adjoints."""
    return tables.read("diffrax_api.toml")


# -- the names rules ask about, by role ([names]) ---------------------------------------------

def names(role: str) -> frozenset[str]:
    """The qualified names (or prefixes) of a role: `names("where")` -> {jax.numpy.where, ...}."""
    found = _api()["names"][role]
    return frozenset([found] if isinstance(found, str) else found)


def name(role: str) -> str:
    """The one qualified name of a role: `name("debug_print")` -> "jax.debug.print"."""
    found = _api()["names"][role]
    if not isinstance(found, str):
        raise TypeError(f"role {role!r} names more than one thing")
    return found


@functools.cache
def kind_preserving() -> dict[str, int]:
    """Equinox functions whose result is of the kind of one argument, by that argument's
    position (`eqx.apply_updates(model, updates)` is a model): read once, as the Sketch asks
    it of every call it follows."""
    return names_table("kind_preserving")


def names_table(role: str) -> dict[str, Any]:
    """A role keyed by qualified name: `names_table("custom_derivatives")["jax.custom_jvp"]` -> "jvp"."""
    found = _api()["names"][role]
    if not isinstance(found, dict):
        raise TypeError(f"role {role!r} is not keyed by names")
    return dict(found)


def library_function(qualname: str) -> bool:
    """`jax.nn.relu`, `jax.numpy.tanh`: a function of the array libraries, used as a value."""
    module, _, name = qualname.rpartition(".")
    return module in names("function_modules") and name[:1].islower()


def starts_with_any(qualname: str | None, role: str) -> bool:
    """Does `qualname` lie under one of a role's prefixes (`jax.numpy.` for `array_makers`)?"""
    return bool(qualname) and any(qualname.startswith(prefix) for prefix in names(role))  # type: ignore[union-attr]


@functools.cache
def control_flow_slots() -> dict[str, tuple[tuple[int, str, tuple[str, ...] | None], ...]]:
    """lax control flow -> its function arguments: (position, keyword, lambda parameters or None)."""
    return {qualname: tuple((slot[0], slot[1], tuple(slot[2]) if len(slot) > 2 else None) for slot in slots)
            for qualname, slots in names_table("control_flow_slots").items()}


def tracer_conversions() -> dict[str, str]:
    """Builtins that need a concrete value -> the error they raise on a tracer (`bool` ->
    TracerBoolConversionError)."""
    return dict(_api()["tracer_conversions"])
