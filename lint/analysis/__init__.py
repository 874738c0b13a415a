"""The semantic model every rule asks: scopes, names, value kinds, contexts, flow.

The one door. A rule imports what it asks the model from this package, never from its
modules (tests/test_layers.py checks): `from odelint.analysis import Facts, Site, Kind`.
What passes the door:
- `Facts`, the per-file model (names, kinds, modules, contexts, flow; `facts.sites_of`,
  `facts.body_scope` instead of the scope index), with the types its answers use
  (`Site`, `Scope`, `Binding`, `Kind`, `ModuleClass`, ...);
- the analyses built on it that rules query (`differentiation`, `key_uses`, `jitted_callee`, ...),
  and helpers that read a call's arguments (`argument_at`, `keyword_arg`, `source_of`, ...);
- `Needs`, the vocabulary a rule declares its pre-check with (`needs = Needs.calls_to(...)`);
  the engine evaluates it on the file's Sketch, which no rule touches;
- namespaces: `jax_api` (the API tables of lint/analysis/data, `[names]` by role),
  `literals` (the one literal reader), `transformed` (transform applications) and the tables
  `known_bad` and `deprecated_apis` with their loaders.
Names load lazily on first use (PEP 562), so importing one module of the model (the cache
stamps of `project`) does not load them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# module of this package -> the names the door gives from it
DOOR: dict[str, tuple[str, ...]] = {
    "arrays": ("is_jax_array", "traced_array"),
    "calls": ("argument_at", "calls_within", "keyword_arg", "positional_args", "source_of"),
    "classes": ("enclosing_class", "instance_class", "is_module_class", "method_of", "named_class"),
    "deprecated_apis": ("DeprecatedApi", "rows_for"),
    "differentiation": (
        "FORWARD", "REVERSE", "STOP_GRADIENT", "Differentiation", "callbacks", "is_stop_gradient",
    ),
    "facts": ("Facts", "Kind", "ModuleClass", "loaded_names", "method_call"),
    "intervals": ("guard",),
    "jitted": ("COMPILING", "STATIC_KEYWORDS", "decorated", "jitted_callee"),
    "keys": ("key_uses",),
    "literals": ("number",),
    "needs": ("Need", "Needs"),
    "reach": ("enclosing_function",),
    "reverse": ("reverse_differentiated_by",),
    "scopes": ("CLASS", "FUNCTION", "LAMBDA", "Binding", "Scope", "Site", "dotted_name"),
    "transformed": ("Application",),
}
# names the door gives under another name: name -> (module, its name there)
RENAMED: dict[str, tuple[str, str]] = {}
NAMESPACES = ("jax_api", "literals", "transformed", "known_bad", "deprecated_apis")
_HOMES = {name: module for module, names in DOOR.items() for name in names}


def __getattr__(name: str) -> object:
    module, attribute = RENAMED.get(name) or (_HOMES.get(name), name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from odelint.analysis.arrays import is_jax_array as is_jax_array, traced_array as traced_array
    from odelint.analysis.calls import (
        argument_at as argument_at, calls_within as calls_within, keyword_arg as keyword_arg,
        positional_args as positional_args, source_of as source_of,
    )
    from odelint.analysis.classes import (
        enclosing_class as enclosing_class, instance_class as instance_class, is_module_class as is_module_class,
        method_of as method_of, named_class as named_class,
    )
    from odelint.analysis.deprecated_apis import DeprecatedApi as DeprecatedApi, rows_for as rows_for
    from odelint.analysis.differentiation import (
        FORWARD as FORWARD, REVERSE as REVERSE, STOP_GRADIENT as STOP_GRADIENT, Differentiation as Differentiation,
        callbacks as callbacks, is_stop_gradient as is_stop_gradient,
    )
    from odelint.analysis.facts import (
        Facts as Facts, Kind as Kind, ModuleClass as ModuleClass, loaded_names as loaded_names,
        method_call as method_call,
    )
    from odelint.analysis.intervals import guard as guard
    from odelint.analysis.jitted import (
        COMPILING as COMPILING, STATIC_KEYWORDS as STATIC_KEYWORDS, decorated as decorated,
        jitted_callee as jitted_callee,
    )
    from odelint.analysis.keys import key_uses as key_uses
    from odelint.analysis.literals import number as number
    from odelint.analysis.needs import Need as Need, Needs as Needs
    from odelint.analysis.reach import enclosing_function as enclosing_function
    from odelint.analysis.reverse import reverse_differentiated_by as reverse_differentiated_by
    from odelint.analysis.scopes import (
        CLASS as CLASS, FUNCTION as FUNCTION, LAMBDA as LAMBDA, Binding as Binding, Scope as Scope, Site as Site,
        dotted_name as dotted_name,
    )
    from odelint.analysis.transformed import Application as Application
