"""What odelint knows about the JAX stack's API, read from the data tables in rules/data/.

`rules/data/jax_api.toml` says which functions transform, trace, differentiate or call back,
and what calls return; `rules/data/library_modules.toml` names the Equinox module classes of
the ecosystem's libraries and their leaves that are not arrays. Both are read once, on first
use, so linting a file that asks nothing pays nothing. No rule hard-codes this knowledge.
"""

from __future__ import annotations

import dataclasses
import functools
import tomllib
from importlib import resources


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


@dataclasses.dataclass(frozen=True)
class Callback:
    qualname: str
    first_arg: int
    differentiable: bool


@dataclasses.dataclass(frozen=True)
class LibraryModule:
    """An Equinox module class of a library, with its non-array leaves by field name."""

    qualname: str
    functions: tuple[str, ...] = ()
    scalars: tuple[str, ...] = ()
    modules: tuple[tuple[str, str], ...] = ()   # (field, class) ; class ends with [] for tuples


def _read(name: str) -> dict:
    text = resources.files("odelint.rules").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return tomllib.loads(text)


@functools.cache
def _api() -> dict:
    return _read("jax_api.toml")


@functools.cache
def transforms() -> dict[str, Transform]:
    found = {}
    for qualname, row in _api()["transform"].items():
        found[qualname] = Transform(qualname, row.get("traces", False), row.get("differentiates"),
                                    row.get("wrt"), row.get("filtered", False), row.get("equinox"),
                                    tuple(row.get("static", ())), row.get("calls_now", False))
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
                                     row.get("reverse", True))
    return found


def traced_body(qualname: str | None) -> TracedBody | None:
    return traced_bodies().get(qualname or "")


def canonical(qualname: str) -> str:
    """The name an old spelling stands for (`jax.util.partial` -> `functools.partial`), else itself."""
    aliases: dict[str, str] = _api()["aliases"]
    return aliases.get(qualname, qualname)


@functools.cache
def callbacks() -> dict[str, Callback]:
    return {name: Callback(name, row["first_arg"], row["differentiable"]) for name, row in _api()["callback"].items()}


def callback(qualname: str | None) -> Callback | None:
    return callbacks().get(qualname or "")


@functools.cache
def _returns() -> dict:
    return _api()["returns"]


def returns_key(qualname: str) -> bool:
    return qualname in _returns()["keys"]


def returns_array(qualname: str) -> bool:
    """Does calling `qualname` give a JAX array (jnp.*, jax.random.normal, jax.nn.relu, ...)?"""
    table = _returns()
    if qualname in table["keys"] or any(qualname == n or qualname.startswith(n + ".") for n in table["not_arrays"]):
        return False
    module, _, name = qualname.rpartition(".")
    return module in table["array_modules"] and not name[:1].isupper()


def static_attribute(name: str) -> bool:
    """`x.shape`, `x.dtype`, ...: a static Python value even when `x` is traced."""
    return name in _returns()["static_attributes"]


def static_function(qualname: str | None) -> bool:
    return qualname in _returns()["static_functions"]


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


@functools.cache
def _libraries() -> dict:
    return _read("library_modules.toml")


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


def consumes_key(qualname: str | None) -> bool:
    """Does calling this `jax.random` function draw from (or split) the key it is given?"""
    return bool(qualname) and qualname.startswith("jax.random.") and qualname not in _api()["keys"]["not_consuming"]


def makes_key(qualname: str | None) -> bool:
    """`jax.random.PRNGKey` / `jax.random.key`: a key from a seed."""
    return qualname in _api()["keys"]["constant_makers"]


def derives_key(qualname: str | None) -> bool:
    """`jax.random.fold_in`: a new key from a key and data."""
    return qualname in _api()["keys"]["derivers"]


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
