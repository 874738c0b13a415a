"""The semantic model every rule asks: scopes, names, value kinds, contexts, flow.

The one door. A rule imports what it asks the model from this package, never from its
modules (tests/test_layers.py checks): `from odelint.analysis import Facts, Site, Kind`.
What passes the door:
- `Facts`, the per-file model (names, kinds, modules, contexts, flow; `facts.sites_of`
  instead of the scope index), with the types its answers use (`Site`, `Kind`,
  `Definition`, `ModuleClass`, `Application`, ...). What a name means comes as a
  `Definition` (`facts.definitions(name, site)`, `facts.passed_for(parameter)`, ...); the
  scope index's bindings and scopes never pass: a rule may hand a scope (`site.scope`) back
  to `Facts` but reads nothing of it (tests/test_layers.py);
- the analyses built on it that rules query (`differentiation`, `key_uses`, `jitted_callee`, ...),
  and helpers that read a call's arguments (`argument_at`, `keyword_arg`, `source_of`, `text_of`, ...);
- `Needs`, the vocabulary a rule declares its pre-check with (`needs = Needs.calls_to(...)`);
  the engine evaluates it on the file's Sketch, which no rule touches;
- namespaces: `jax_api` (the API tables of lint/analysis/data, `[names]` by role),
  `literals` (the one literal reader), the tables `known_bad` and `deprecated_apis` with
  their loaders, and `x64` (whether the project runs in 64-bit mode, from its configuration
  files and entry modules).
Names load lazily on first use (PEP 562), so importing one module of the model (the cache
stamps of `project`) does not load them all.
"""

from __future__ import annotations

import importlib

# module of this package -> the names the door gives from it
DOOR: dict[str, tuple[str, ...]] = {
    "arrays": ("AtUpdate", "at_update", "is_jax_array", "rebindable_here", "traced_array"),
    "built": ("Built", "built_by"),
    "calls": ("argument_at", "calls_within", "keyword_arg", "operand_args", "positional_args",
              "source_of", "text_of"),
    "classes": ("constructions", "declared_fields", "enclosing_class", "initialising_methods", "instance_class",
                "is_module_class", "method_of", "named_class"),
    "definitions": ("DefinedAs", "Definition"),
    "deprecated_apis": ("DeprecatedApi", "Standing", "rows_for", "triggers_for", "within_module"),
    "differentiation": (
        "FORWARD", "REVERSE", "STOP_GRADIENT", "Differentiation", "callbacks", "is_stop_gradient",
    ),
    "facts": ("Facts", "Kind", "ModuleClass", "function_wrappers", "loaded_names", "method_call"),
    "intervals": ("guard",),
    "jitted": ("COMPILING", "STATIC_KEYWORDS", "decorated", "jitted_callee"),
    "keys": ("key_uses",),
    "leaves": ("InvalidLeaf", "every_array_of", "filtered_source", "module_with_invalid_leaf"),
    "literals": ("number",),
    "loops": ("over_configurations",),
    "needs": ("Need", "Needs"),
    "reverse": ("reverse_differentiated_by",),
    "scopes": ("Site", "dotted_name", "names_read"),
    "transformed": ("Application",),
    "undifferentiated": ("never_differentiated",),
    "zeros": ("pairwise_difference", "squared_pairwise_difference", "tested_for_zero", "zero_filled_parameter"),
}
# names the door gives under another name: name -> (module, its name there)
RENAMED: dict[str, tuple[str, str]] = {}
NAMESPACES = ("jax_api", "literals", "known_bad", "deprecated_apis", "x64")
_HOMES = {name: module for module, names in DOOR.items() for name in names}


def __getattr__(name: str) -> object:
    module, attribute = RENAMED.get(name) or (_HOMES.get(name), name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    globals()[name] = value
    return value


TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from odelint.analysis.arrays import AtUpdate as AtUpdate
    from odelint.analysis.arrays import at_update as at_update
    from odelint.analysis.arrays import is_jax_array as is_jax_array
    from odelint.analysis.arrays import rebindable_here as rebindable_here
    from odelint.analysis.arrays import traced_array as traced_array
    from odelint.analysis.built import Built as Built
    from odelint.analysis.built import built_by as built_by
    from odelint.analysis.calls import (
        argument_at as argument_at,
    )
    from odelint.analysis.calls import (
        calls_within as calls_within,
    )
    from odelint.analysis.calls import (
        keyword_arg as keyword_arg,
    )
    from odelint.analysis.calls import operand_args as operand_args
    from odelint.analysis.calls import (
        positional_args as positional_args,
    )
    from odelint.analysis.calls import (
        source_of as source_of,
    )
    from odelint.analysis.calls import (
        text_of as text_of,
    )
    from odelint.analysis.classes import constructions as constructions
    from odelint.analysis.classes import declared_fields as declared_fields
    from odelint.analysis.classes import (
        enclosing_class as enclosing_class,
    )
    from odelint.analysis.classes import initialising_methods as initialising_methods
    from odelint.analysis.classes import (
        instance_class as instance_class,
    )
    from odelint.analysis.classes import (
        is_module_class as is_module_class,
    )
    from odelint.analysis.classes import (
        method_of as method_of,
    )
    from odelint.analysis.classes import (
        named_class as named_class,
    )
    from odelint.analysis.definitions import DefinedAs as DefinedAs
    from odelint.analysis.definitions import Definition as Definition
    from odelint.analysis.deprecated_apis import (
        DeprecatedApi as DeprecatedApi,
    )
    from odelint.analysis.deprecated_apis import (
        Standing as Standing,
    )
    from odelint.analysis.deprecated_apis import (
        rows_for as rows_for,
    )
    from odelint.analysis.deprecated_apis import (
        triggers_for as triggers_for,
    )
    from odelint.analysis.deprecated_apis import (
        within_module as within_module,
    )
    from odelint.analysis.differentiation import (
        FORWARD as FORWARD,
    )
    from odelint.analysis.differentiation import (
        REVERSE as REVERSE,
    )
    from odelint.analysis.differentiation import (
        STOP_GRADIENT as STOP_GRADIENT,
    )
    from odelint.analysis.differentiation import (
        Differentiation as Differentiation,
    )
    from odelint.analysis.differentiation import (
        callbacks as callbacks,
    )
    from odelint.analysis.differentiation import (
        is_stop_gradient as is_stop_gradient,
    )
    from odelint.analysis.facts import (
        Facts as Facts,
    )
    from odelint.analysis.facts import (
        Kind as Kind,
    )
    from odelint.analysis.facts import (
        ModuleClass as ModuleClass,
    )
    from odelint.analysis.facts import function_wrappers as function_wrappers
    from odelint.analysis.facts import (
        loaded_names as loaded_names,
    )
    from odelint.analysis.facts import (
        method_call as method_call,
    )
    from odelint.analysis.intervals import guard as guard
    from odelint.analysis.jitted import (
        COMPILING as COMPILING,
    )
    from odelint.analysis.jitted import (
        STATIC_KEYWORDS as STATIC_KEYWORDS,
    )
    from odelint.analysis.jitted import (
        decorated as decorated,
    )
    from odelint.analysis.jitted import (
        jitted_callee as jitted_callee,
    )
    from odelint.analysis.keys import key_uses as key_uses
    from odelint.analysis.leaves import (
        InvalidLeaf as InvalidLeaf,
    )
    from odelint.analysis.leaves import (
        every_array_of as every_array_of,
    )
    from odelint.analysis.leaves import (
        filtered_source as filtered_source,
    )
    from odelint.analysis.leaves import (
        module_with_invalid_leaf as module_with_invalid_leaf,
    )
    from odelint.analysis.literals import number as number
    from odelint.analysis.loops import over_configurations as over_configurations
    from odelint.analysis.needs import Need as Need
    from odelint.analysis.needs import Needs as Needs
    from odelint.analysis.reverse import reverse_differentiated_by as reverse_differentiated_by
    from odelint.analysis.scopes import (
        Site as Site,
    )
    from odelint.analysis.scopes import (
        dotted_name as dotted_name,
    )
    from odelint.analysis.scopes import names_read as names_read
    from odelint.analysis.transformed import Application as Application
    from odelint.analysis.undifferentiated import never_differentiated as never_differentiated
    from odelint.analysis.zeros import (
        pairwise_difference as pairwise_difference,
    )
    from odelint.analysis.zeros import (
        squared_pairwise_difference as squared_pairwise_difference,
    )
    from odelint.analysis.zeros import (
        tested_for_zero as tested_for_zero,
    )
    from odelint.analysis.zeros import zero_filled_parameter as zero_filled_parameter
