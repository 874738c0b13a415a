"""Light local dataflow that rules share: what a name means and what kind of value it holds.

Questions are answered lazily and memoised, so a file pays only for what its rules ask:
- `qualname(expr)`: `eqx.filter` -> "equinox.filter", through imports and aliases;
- `kind(expr)`: is the value an Equinox module, an already filtered tree, or unknown;
- `optax_constructors(expr)`: which optax constructors built an optimiser value;
- `callee(func)`: which function of this file a call reaches (through jit/grad wrappers);
- `reference(qualname, site)`: how a fix should spell a name, reusing the file's aliases.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, TypeVar, cast

import libcst as cst
from odelint.analysis import jax_api, literals
from odelint.analysis.calls import argument_at, argument_for, keyword_arg
from odelint.analysis.definitions import Definition, record_of
from odelint.analysis.jax_api import function_wrappers
from odelint.analysis.scopes import CLASS, FUNCTION, LAMBDA, Binding, Scope, ScopeIndex, Site, children_of, own_nodes
from odelint.api.finding import NeedImport

T = TypeVar("T")
Node = TypeVar("Node", bound="cst.CSTNode")

if TYPE_CHECKING:
    from odelint.analysis.differentiation import Differentiation
    from odelint.analysis.leaves import Leaf, Leaves
    from odelint.analysis.tracing import Traced, Tracing
    from odelint.analysis.transformed import Application


class Kind(enum.Enum):
    MODULE = "module"          # an Equinox module instance (may hold non-array leaves)
    FILTERED = "filtered"      # eqx.filter(...) / eqx.partition(...)[0]: arrays only
    ARRAY = "array"            # a JAX array
    KEY = "key"                # a PRNG key (or the array of keys `split` returns)
    OPTAX = "optax"            # an optax gradient transformation
    FUNCTION = "function"      # a function, lambda, or transformed function (`jax.vmap(f)`)
    PLAIN = "plain"            # a Python number, string, bool or None
    OTHER = "other"            # known, and none of the above (containers, classes, ...)
    UNKNOWN = "unknown"


# Equinox functions whose result is the same kind as one of their arguments.
_KIND_PRESERVING = jax_api.kind_preserving()
# Members of equinox.nn that are not modules.
_NN_NON_MODULES = jax_api.names("nn_non_modules")
# optax functions that build no gradient transformation.
_OPTAX_NOT_TRANSFORMATIONS = frozenset({"apply_updates", "incremental_update", "periodic_update", "global_norm",
                                        "safe_norm", "safe_root_mean_squares"})
_LITERAL_NAMES = frozenset({"True", "False", "None"})


def model_node_types() -> set[type]:
    """The node types the model reads from the engine's shared index, whatever rules run."""
    return {cst.Call, cst.Try, cst.If}


class _Qualnames:
    """The key under which `Facts.qualname` keeps its answers for an editor's next lint."""


class Facts:
    def __init__(self, index: ScopeIndex, path: str | None = None, seen: frozenset[str] = frozenset()) -> None:
        self.index = index
        self.path = path                # the linted file, to find the project's other files
        self._seen = seen               # files whose facts are being built (import cycles)
        self._qualnames: dict[int, str | None] = {}
        self._starred: dict[str, str | None] = {}  # a name no binding defines -> the star import giving it
        # node -> (the node, its scope, its qualified name); bindings being resolved, while any are
        self._node_qualnames: dict[int, tuple[cst.BaseExpression, Scope, str | None]] = {}
        self._last_qualnames: dict[int, tuple[cst.BaseExpression, Scope, str | None]] | None = None  # kept
        self._resolving = 0
        self._callees: dict[tuple[int, int], tuple[cst.BaseExpression, cst.FunctionDef | None]] = {}
        self._name_callees: dict[tuple[str, int], tuple[Scope, cst.FunctionDef | None]] = {}  # the scope keeps its id
        self._module_classes: dict[int, bool] = {}
        self._binding_kinds: dict[int, Kind] = {}
        self._binding_classes: dict[int, ModuleClass | None] = {}
        self._classes_in_progress: set[int] = set()  # bindings whose class is being worked out
        self._provisional: set[int] = set()          # of those, the ones read before they were known
        self._returns: dict[tuple[int, tuple[int, ...]], Kind] = {}
        self._calls_by_callee: dict[int, list[tuple[cst.Call, Site]]] | None = None
        self._calls_by_name: dict[str, list[tuple[cst.Call, Site]]] | None = None  # callee's qualname -> calls
        self._calls_by_method: dict[str, list[tuple[cst.Call, Site]]] = {}      # `x.name(...)`: name -> calls
        # a call or decorated def -> (it, the application(s) of a transform it makes): asked by several rules
        self._applications: dict[int, tuple[cst.CSTNode, Application | list[Application] | None]] = {}
        self._in_progress: set[int] = set()
        self._in_progress_returns: set[tuple[int, tuple[int, ...]]] = set()
        self._tracing: Tracing | None = None
        self._leaves: Leaves | None = None
        self._parts: dict[type, object] = {}

    def release(self) -> None:
        """Break the model's reference cycles (each scope and its bindings, the model and its
        analyses) once nothing will ask it anything more: refcounting then frees the file's
        trees at once, where the cyclic collector would free them at its next full collection."""
        index = self.index
        scopes = {id(index.module_scope): index.module_scope}
        scopes.update((id(scope), scope) for scope in index.body_scopes.values())
        scopes.update((id(site.scope), site.scope) for found in index.nodes.values() for _, site in found)
        for scope in scopes.values():
            scope.bindings = {}
        index.__dict__.clear()
        self.__dict__.clear()

    def part(self, build: Callable[[Facts], T], kind: type[T]) -> T:
        """An analysis built on these facts, built on first use and kept with them (one per
        kind: `differentiation`, loops, key uses, ...), so no module keeps a cache of its own."""
        found = self._parts.get(kind)
        if found is None:
            found = self._parts[kind] = build(self)
        return found  # type: ignore[return-value]

    def carried(self, kind: type) -> dict | None:
        """What the analysis `kind` kept from this document's last lint, to reuse where an edit
        changed none of its inputs (an editor's document: the statements an edit did not touch
        are the same nodes in the new tree); the analysis puts in it what it keeps for the
        next lint. None for a file linted once: there is no next lint to keep anything for."""
        return self.index.carried.setdefault(kind, {}) if self.index.carried is not None else None

    @property
    def differentiation(self) -> Differentiation:
        """What code runs under differentiation, in which modes (odelint.analysis.differentiation)."""
        from odelint.analysis.differentiation import differentiation
        return differentiation(self)

    # -- transforms applied to this file's functions (odelint.analysis.transformed) ------

    def transform_applied(self, call: cst.Call, site: Site) -> Application | None:
        """The transform this call applies to a function of this file (`jax.jit(f, ...)`,
        `jax.grad(functools.partial(f, x=x))`), not jvp/vjp, which call it at once; else None.
        Each answer is kept: the rules that check applications ask about the same calls."""
        known = self._applications.get(id(call))
        if known is None or known[0] is not call:
            from odelint.analysis.transformed import applied
            known = self._applications[id(call)] = (call, applied(self, call, site))
        return known[1]  # type: ignore[return-value]

    def transforms_decorating(self, function: cst.FunctionDef, site: Site) -> list[Application]:
        """The transforms that decorate `function` (`@jax.jit`, `@jax.jit(...)`,
        `@functools.partial(jax.jit, ...)`, a name bound to one); `site`: where the def is."""
        known = self._applications.get(id(function))
        if known is None or known[0] is not function:
            from odelint.analysis.transformed import decorations
            known = self._applications[id(function)] = (function, decorations(self, function, site))
        return list(known[1])  # type: ignore[arg-type]

    def transformed_calls(self, application: Application) -> list[tuple[cst.Call, Site]]:
        """The calls of a transformed result: `jax.jit(f)(...)`, `g = jax.jit(f); g(...)`, or
        the decorated function's own calls."""
        from odelint.analysis.transformed import calls
        return calls(self, application)

    def module_received(self, application: Application, parameter: Definition) -> ModuleClass | None:
        """The Equinox module class a parameter of a transformed function receives: from its
        annotation, else from the calls of the transformed result when they all agree."""
        from odelint.analysis.transformed import module_argument
        return module_argument(self, application, parameter)

    # -- contexts (built on first use) -------------------------------------------------

    @property
    def tracing(self) -> Tracing:
        """Where code runs on tracers and which values there are traced (odelint.analysis.tracing)."""
        if self._tracing is None:
            from odelint.analysis.tracing import Tracing
            self._tracing = Tracing(self)
        return self._tracing

    def non_array_leaves(self, module_class: ModuleClass) -> tuple[Leaf, ...]:
        """The leaves of a module class that are not arrays (odelint.analysis.leaves)."""
        if self._leaves is None:
            from odelint.analysis.leaves import Leaves
            self._leaves = Leaves(self)
        return self._leaves.non_array(module_class)

    def traced_by(self, site: Site) -> str | None:
        """Why the code at `site` runs on abstract tracers (`step` is traced by `jax.jit`), else None."""
        return self.tracing.traced_by(site)

    def branch_runner(self, site: Site) -> cst.FunctionDef | None:
        """The function that runs the code at `site` as a `lax.cond`/`lax.switch` branch (once
        per call of that function, unlike a scan or loop body): the `def` around the branch
        function that holds `site`, else None."""
        branch = self.tracing.branch_scope(site)
        runner = branch.parent if branch is not None else None
        return runner.node if runner is not None and runner.kind == FUNCTION else None  # type: ignore[return-value]

    def traced_value(self, node: cst.BaseExpression, site: Site) -> Traced | None:
        """The traced parameter the value of `node` derives from, with why it is traced, else None."""
        return self.tracing.traced_value(node, site)

    def differentiated_by(self, site: Site) -> str | None:
        """Why the code at `site` may run under differentiation (`loss` is differentiated by `jax.grad`)."""
        from odelint.analysis.differentiation import differentiation
        return differentiation(self).why_differentiated(site)

    def copes_with_absence(self, node: cst.CSTNode) -> bool:
        """Is this import or attribute inside a compatibility shim that catches its failure
        (a `try` catching ImportError/AttributeError, its fallback, a version switch)?
        (odelint.analysis.guards)"""
        from odelint.analysis.guards import guards
        return guards(self).copes_with_absence(node)

    def loop_at(self, site: Site) -> cst.For | cst.While | None:
        """The innermost Python loop of the same function that runs the code at `site` once per
        iteration (its body, a `for` target, a `while` test), else None. Noted by the one traversal."""
        return self.index.loop_at(site)

    def on_host(self, site: Site) -> bool:
        """Is the code at `site` neither traced nor differentiated (plain Python on the host)?"""
        return self.traced_by(site) is None and self.differentiated_by(site) is None

    # -- names ---------------------------------------------------------------------------

    def lookup(self, name: str, scope: Scope) -> list[Binding]:
        return self.index.lookup(name, scope)

    @property
    def module_scope(self) -> Scope:
        """The file's top-level scope."""
        return self.index.module_scope

    def body_scope(self, node: cst.CSTNode) -> Scope | None:
        """The scope a `def`, `lambda`, class or comprehension opens, else None."""
        return self.index.body_scope(node)

    def sites_of(self, node_type: type[Node]) -> list[tuple[Node, Site]]:
        """Every node of this type in the file with its site, in source order (the engine's
        shared index: only node types some rule or the model visits are kept)."""
        return self.index.of_type(node_type)

    def binding_of(self, node: cst.FunctionDef | cst.ClassDef) -> Binding | None:
        """The binding a `def` or `class` statement creates in the scope around it."""
        scope = self.index.body_scope(node)
        if scope is None or scope.parent is None:
            return None
        return next((b for b in scope.parent.bindings.get(node.name.value, []) if b.node is node), None)

    def qualname(self, node: cst.BaseExpression, scope: Scope) -> str | None:
        """The dotted name an expression refers to, resolved through imports and aliases.

        Asked about every call by many rules and analyses (a training script's edit asks 9,000
        times), so it compares exact types (LibCST's node classes are ABCs, whose `isinstance`
        is several times slower) and remembers each node's answer, keyed by the node alone."""
        known = self._node_qualnames.get(id(node))
        if known is not None and known[0] is node and known[1] is scope:  # an id outlives no node
            return known[2]
        last = self._last_qualnames if self._last_qualnames is not None else self._qualnames_kept()
        known = last.get(id(node))
        if known is not None and known[0] is node and known[1] is scope:
            self._node_qualnames[id(node)] = known
            return known[2]
        kind = type(node)
        if kind is cst.Name:
            found = self._name_qualname(cast(cst.Name, node).value, scope)
        elif kind is cst.Attribute:
            attribute = cast(cst.Attribute, node)
            base = self.qualname(attribute.value, scope)
            found = jax_api.canonical(f"{base}.{attribute.attr.value}") if base else None
        else:
            return None
        if not self._resolving:  # an answer found inside an alias chain may be provisional
            self._node_qualnames[id(node)] = (node, scope, found)
        return found

    def _qualnames_kept(self) -> dict[int, tuple[cst.BaseExpression, Scope, str | None]]:
        """What `qualname` answered in this document's last lint, when every module-level name
        may still mean what it meant then (an editor's document; else nothing). A node of a
        statement an edit did not touch is the same node in the same scopes, whose bindings
        are its own code's; what else an answer reads is the module scope's names, compared
        here as `qualname` reads them (`_names_read`)."""
        self._last_qualnames = {}
        kept = self.carried(_Qualnames)
        if kept is not None:
            names = self._names_read()
            if names is not None and kept.get("names") == names:
                self._last_qualnames = kept["answers"]
            kept["names"], kept["answers"] = names, self._node_qualnames
        return self._last_qualnames

    def _names_read(self) -> tuple | None:
        """The module scope's bindings as resolving a name reads them (`_bindings_qualname`):
        an import's name, `x = None`, an alias to another name (that very node), or anything
        else; None after a star import, whose names come from other files."""
        if self.index.star_imports:
            return None
        found: list[tuple] = []
        for name, bindings in self.index.module_scope.bindings.items():
            for binding in bindings:
                value = binding.value
                if binding.kind == "import":
                    found.append((name, "import", binding.qualname))
                elif binding.kind == "assign" and type(value) is cst.Name and cast(cst.Name, value).value == "None":
                    found.append((name, "None"))
                elif binding.kind == "assign" and not binding.path and type(value) in (cst.Name, cst.Attribute):
                    found.append((name, "alias", value, binding.scope))
                else:
                    found.append((name, "other"))
        return tuple(found)

    def _name_qualname(self, name: str, scope: Scope) -> str | None:
        bindings = self.lookup(name, scope)
        if not bindings:
            return self._star_qualname(name) if self.index.star_imports else None
        key = id(bindings[0])
        if key in self._qualnames:
            return self._qualnames[key]
        self._qualnames[key] = None  # guards `a = b; b = a`
        self._resolving += 1
        try:
            result = self._bindings_qualname(bindings)
        finally:
            self._resolving -= 1
        self._qualnames[key] = result
        return result

    def _bindings_qualname(self, bindings: list[Binding]) -> str | None:
        """One meaning for all bindings, else None. `x = None` fallbacks (try/except) are ignored."""
        names = set()
        for binding in bindings:
            if binding.kind == "import":
                names.add(jax_api.canonical(binding.qualname) if binding.qualname else None)
            elif (binding.kind == "assign" and isinstance(binding.value, cst.Name)
                  and binding.value.value == "None"):
                continue
            elif (binding.kind == "assign" and not binding.path
                  and isinstance(binding.value, (cst.Name, cst.Attribute))):
                names.add(self.qualname(binding.value, binding.scope))
            else:
                return None
        return names.pop() if len(names) == 1 else None

    def reference(self, qualname: str, site: Site) -> tuple[cst.BaseExpression, tuple[NeedImport, ...]]:
        """Spell `qualname` at `site` reusing the file's imports; else say which import to add.

        `equinox.filter` becomes `eq.filter` after `import equinox as eq`, `filter_` after
        `from equinox import filter as filter_`, `jax.lax.stop_gradient` after `import jax`,
        or `eqx.filter` plus `import equinox as eqx`. The longest imported prefix wins.
        """
        best: tuple[int, str] | None = None
        for bindings in self.index.module_scope.bindings.values():
            for candidate in bindings:
                imported = candidate.qualname or ""
                if (candidate.kind == "import" and _reachable(imported, qualname)
                        and (best is None or len(imported) > best[0]) and self._visible(candidate, site)):
                    best = (len(imported), candidate.name)
        if best is not None:
            rest = qualname[best[0]:].lstrip(".")
            return _attribute_chain(best[1], rest), ()
        module, _, attr = qualname.rpartition(".")
        top = module.split(".")[0]
        for local, need in ((_CONVENTIONAL_ALIASES.get(module), None), (top, NeedImport(module, None))):
            if local and not self._name_taken(local):
                need = need or NeedImport(module, None if local == module else local)
                spelled = local if need.alias or local == module else module
                return _attribute_chain(spelled, attr), (need,)
        raise LookupError(f"no free name to import {module} under")

    def _visible(self, binding: Binding, site: Site) -> bool:
        """Does the import's name mean that import at `site` (repeated imports of it included)?"""
        return self._name_qualname(binding.name, site.scope) == binding.qualname

    def _name_taken(self, name: str) -> bool:
        return any(b.name == name for b in self.index.all_bindings())

    def decorator_value(self, node: cst.BaseExpression, scope: Scope) -> tuple[cst.BaseExpression, Scope]:
        """What a decorator applies, and the scope to read it in: `@jit_static` after
        `jit_static = functools.partial(jax.jit, static_argnums=1)` applies that call (a name
        bound once to a call: a configured transform); any other decorator is itself."""
        if isinstance(node, cst.Name):
            bindings = self.lookup(node.value, scope)
            if (len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path
                    and isinstance(bindings[0].value, cst.Call)):
                return bindings[0].value, bindings[0].scope
        return node, scope

    def local_value(self, name: cst.Name, site: Site) -> tuple[cst.BaseExpression, Site] | None:
        """The value a local name holds at `site` when its one binding is a plain assignment
        earlier in the same scope (`r = jnp.sqrt(y)` then `jnp.where(y > 0, r, 0.0)`), with
        where that value is computed; None otherwise (parameters, loops, reassignments)."""
        bindings = self.lookup(name.value, site.scope)
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if (binding.kind != "assign" or binding.path or binding.value is None or binding.scope is not site.scope
                or binding.order >= site.order):
            return None
        return binding.value, Site(binding.scope, binding.order)

    # -- what names are defined as: the answers rules get (never bindings or scopes) ------

    def definitions(self, name: cst.Name | str, site: Site) -> tuple[Definition, ...]:
        """Every definition `name` may have at `site`, in source order: those of the innermost
        scope that binds it (Python's lookup; class bodies are invisible to their methods)."""
        text = name if isinstance(name, str) else name.value
        return tuple(Definition(binding) for binding in self.lookup(text, site.scope))

    def definition(self, name: cst.Name | str, site: Site) -> Definition | None:
        """The one definition of `name` at `site`; None when it has none or several."""
        found = self.definitions(name, site)
        return found[0] if len(found) == 1 else None

    def definition_of(self, node: cst.FunctionDef | cst.ClassDef) -> Definition | None:
        """The definition a `def` or `class` statement makes in the scope around it."""
        binding = self.binding_of(node)
        return Definition(binding) if binding is not None else None

    def defined_in(self, node: cst.FunctionDef | cst.Lambda | cst.ClassDef) -> dict[str, tuple[Definition, ...]]:
        """The names the body of a function, lambda or class binds (its parameters, locals,
        fields and methods), each with its definitions in source order."""
        scope = self.index.body_scope(node)
        if scope is None:
            return {}
        return {name: tuple(Definition(b) for b in bindings) for name, bindings in scope.bindings.items()}

    def assigned_to(self, value: cst.BaseExpression, site: Site) -> Definition | None:
        """The name that a plain assignment at `site` binds to this very expression
        (`f = jax.custom_jvp(g)` for the call), else None."""
        for bindings in site.scope.bindings.values():
            for binding in bindings:
                if binding.kind == "assign" and not binding.path and binding.value is value:
                    return Definition(binding)
        return None

    def passed_for(self, parameter: Definition) -> list[tuple[cst.BaseExpression | None, Site]]:
        """What each call of this file of a parameter's function passes for it, with where
        the call is (None where a call passes nothing for it: a default, or `*args`); a
        method's `self` is bound, so its other parameters count from 1."""
        binding = record_of(parameter)
        function = binding.scope.node
        if binding.kind != "param" or not isinstance(function, cst.FunctionDef) or binding.scope.parent is None:
            return []
        bound = 1 if binding.scope.parent.kind == CLASS else 0
        return [(argument_for(call, binding, bound), site) for call, site in self.calls_of(function)]

    def free_names(self, function: cst.FunctionDef | cst.Lambda) -> list[cst.Name]:
        """The names the code of a function (nested code included) reads and that neither its
        body nor code nested in it binds: what it takes from around it (enclosing functions,
        the module, builtins)."""
        scope = self.index.body_scope(function)
        if scope is None:
            return []
        bound = set(scope.bindings)
        for inner in self.index.body_scopes.values():
            outer = inner.parent
            while outer is not None and outer is not scope:
                outer = outer.parent
            if outer is scope:
                bound.update(inner.bindings)
        return [name for name in loaded_names(function.body, into_nested=True) if name.value not in bound]

    def captured(self, function: cst.FunctionDef | cst.Lambda) -> list[tuple[cst.Name, tuple[Definition, ...]]]:
        """The names a function (nested code included) reads from the functions around it
        (its closure, not module globals), each with its definitions there."""
        scope = self.index.body_scope(function)
        if scope is None:
            return []
        found = []
        for name in loaded_names(function.body, into_nested=True):
            bindings = self.lookup(name.value, scope)
            if bindings and bindings[0].scope is not scope and bindings[0].scope.kind in (FUNCTION, LAMBDA):
                found.append((name, tuple(Definition(b) for b in bindings)))
        return found

    def exported_names(self) -> frozenset[str] | None:
        """The names the module's `__all__` lists; None when it has no `__all__`."""
        bindings = self.index.module_scope.bindings.get("__all__")
        if not bindings:
            return None
        return frozenset(name for binding in bindings
                         if isinstance(binding.value, (cst.List, cst.Tuple))
                         for element in binding.value.elements
                         if isinstance(element.value, cst.SimpleString)
                         and (name := literals.string(element.value)) is not None)

    def body_at(self, site: Site) -> cst.CSTNode:
        """The `def`, lambda, class, comprehension or module whose own code holds `site`."""
        return site.scope.node

    def precedes(self, earlier: Site, later: Site) -> bool:
        """Does the code at `earlier` run before the code at `later`, in the same body?"""
        return earlier.scope is later.scope and earlier.order < later.order

    # -- Equinox modules -----------------------------------------------------------------

    def is_module_type(self, node: cst.BaseExpression, scope: Scope) -> bool:
        """Does a type expression (class reference or annotation) name an Equinox module class?"""
        return self.module_type(node, scope) is not None

    def module_type(self, node: cst.BaseExpression, scope: Scope) -> ModuleClass | None:
        """The Equinox module class a type expression names: a class of this file, or a
        library's (`equinox.nn.MLP`, `diffrax.PIDController`, from lint/analysis/data), else None."""
        qualname = self.qualname(node, scope)
        if qualname == "equinox.Module":
            return ModuleClass(None, qualname)
        if qualname and qualname.startswith("equinox.nn.") and qualname not in _NN_NON_MODULES:
            return ModuleClass(None, qualname) if qualname.rsplit(".", 1)[1][:1].isupper() else None
        if qualname is not None and jax_api.is_library_module(qualname):
            return ModuleClass(None, qualname)
        if isinstance(node, cst.Name):
            for binding in self.lookup(node.value, scope):
                if binding.kind == "class" and self.is_module_class(binding):
                    return ModuleClass(binding.node, node.value)  # type: ignore[arg-type]
        return self._project_module_type(qualname)

    def _project_module_type(self, qualname: str | None) -> ModuleClass | None:
        """A module class that another file of the project defines (`from model import Net`)."""
        if not qualname or "." not in qualname.lstrip("."):
            return None
        module, _, name = qualname.rpartition(".")
        other = self._project_facts(module)
        return other.exported_module_class(name) if other is not None else None

    def exported_module_class(self, name: str) -> ModuleClass | None:
        """The module class `from <this file> import name` gives: one defined here, or one
        imported or star-imported here from another project file."""
        for binding in self.index.module_scope.bindings.get(name, []):
            if binding.kind == "class" and self.is_module_class(binding):
                return ModuleClass(binding.node, name, self)  # type: ignore[arg-type]
            if binding.kind == "import":
                return self._project_module_type(binding.qualname)
        starred = self._star_qualname(name) if self.index.star_imports else None
        return self._project_module_type(starred) if starred is not None else None

    def _star_qualname(self, name: str) -> str | None:
        """`models.MLP` for `MLP` after `from models import *`, when `models` is a file of the
        project that defines or re-exports `MLP` (a library's names are not known here)."""
        if name not in self._starred:
            self._starred[name] = None  # cycle guard
            self._starred[name] = next((f"{module}.{name}" for module in self.index.star_imports
                                        if (other := self._project_facts(module)) is not None
                                        and other._gives_to_star(name)), None)
        return self._starred[name]

    def _gives_to_star(self, name: str) -> bool:
        """Does `from <this file> import *` give `name`: listed in `__all__` (or, without one,
        public), and defined at the top level here or star-imported from another file?"""
        exported = self.exported_names()
        if (name not in exported) if exported is not None else name.startswith("_"):
            return False
        return bool(self.index.module_scope.bindings.get(name)) or (
            bool(self.index.star_imports) and self._star_qualname(name) is not None)

    def _project_facts(self, module: str) -> Facts | None:
        """The facts of the project file that `import <module>` means here (None for a library,
        this file, a file being read already, or no file)."""
        from odelint.analysis import project

        if self.path is None:
            return None
        path = self.path
        return project.facts_imported(self.part(lambda _: project.ImportsOf(path), project.ImportsOf), module,
                                      self._seen)

    def is_module_class(self, binding: Binding) -> bool:
        """Is this class binding a subclass of eqx.Module (directly or through this file's classes)?"""
        key = id(binding.node)
        if key not in self._module_classes:
            self._module_classes[key] = False  # cycle guard
            bases = binding.node.bases  # type: ignore[attr-defined]
            self._module_classes[key] = any(self.is_module_type(base.value, binding.scope) for base in bases)
        return self._module_classes[key]

    def module_class(self, node: cst.BaseExpression, site: Site) -> ModuleClass | None:
        """Which Equinox module class the value of `node` is an instance of, when known."""
        if isinstance(node, cst.Call):
            func = node.func
            if (isinstance(func, cst.Call) and func.args
                    and self.qualname(func.func, site.scope) == "equinox.nn.make_with_state"):
                func = func.args[0].value  # make_with_state(Cls)(...) builds a Cls
            found = self.module_type(func, site.scope)
            if found is not None and found.node is None and found.name in jax_api.names("layer_containers"):
                return ModuleClass(None, found.name, built=(node, site))  # its leaves are the layers given
            if found is not None:
                return found
            qualname = self.qualname(node.func, site.scope)
            if qualname in _KIND_PRESERVING:
                argument = argument_at(node, None, _KIND_PRESERVING[qualname])
                return self.module_class(argument.value, site) if argument is not None else None
            function = self.callee(node.func, site.scope) if qualname is None else None
            return self._returned_module_class(function, ()) if function is not None else None
        if isinstance(node, cst.Name):
            bindings = self.lookup(node.value, site.scope)
            classes = {self._binding_module_class(b) for b in bindings}
            classes.discard(None)
            return classes.pop() if len(classes) == 1 else None
        if isinstance(node, cst.Attribute):
            owner = self._method_class_of_self(node.value, site.scope)
            if owner is not None:
                return self._field_module_class(owner, node.attr.value)
            outer = self.module_class(node.value, site)
            if outer is not None and outer.node is not None:
                return self._field_module_class(outer.node, node.attr.value)
        if isinstance(node, cst.Subscript):
            return self._element_module_class(node.value, site) if _single_index(node) else None
        return None

    def _element_module_class(self, container: cst.BaseExpression | None, site: Site,
                              iterated: bool = False) -> ModuleClass | None:
        """The one module class the elements of a container hold (`[eqx.nn.MLP(...) for ...]`)."""
        classes = {self.module_class(element, where)
                   for element, where in self.elements(container, site, iterated=iterated)}
        classes.discard(None)
        return classes.pop() if len(classes) == 1 else None

    def elements(self, container: cst.BaseExpression | None, site: Site, seen: frozenset[int] = frozenset(),
                 iterated: bool = False) -> list[tuple[cst.BaseExpression, Site]]:
        """What a container may hold, each with where to read it: the elements of a list, tuple,
        set or dict display (dict values, or its keys when `iterated`: `for k in d` gives keys),
        the element of a comprehension, through a name bound once to one of these. Empty when
        the container is not known."""
        if container is None or id(container) in seen:
            return []
        seen = seen | {id(container)}
        if isinstance(container, (cst.List, cst.Tuple, cst.Set)):
            return [(e.value, site) for e in container.elements if isinstance(e, cst.Element)]
        if isinstance(container, cst.Dict):
            return [(e.key if iterated else e.value, site)
                    for e in container.elements if isinstance(e, cst.DictElement)]
        if isinstance(container, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            scope = self.index.body_scope(container)
            return [(container.elt, Site(scope, 10**9))] if scope is not None else []
        if isinstance(container, cst.Name):
            bindings = self.lookup(container.value, site.scope)
            if len(bindings) == 1 and bindings[0].kind == "assign" and not bindings[0].path:
                binding = bindings[0]
                return self.elements(binding.value, Site(binding.scope, binding.order), seen, iterated)
        return []

    def _binding_module_class(self, binding: Binding) -> ModuleClass | None:
        """The class a binding holds. A binding met again while its own class is being worked
        out (`model = step(model)` in a loop, `step` returning its parameter) answers None for
        now; a result that leaned on such a provisional answer of another binding is not kept,
        since that binding's real answer may differ once known."""
        key = id(binding)
        if key in self._binding_classes:
            return self._binding_classes[key]
        if key in self._classes_in_progress:
            self._provisional.add(key)
            return None
        outer, self._provisional = self._provisional, set()
        self._classes_in_progress.add(key)
        try:
            result = self._compute_binding_module_class(binding)
        finally:
            self._classes_in_progress.discard(key)
        self._provisional.discard(key)
        if not self._provisional:
            self._binding_classes[key] = result
        self._provisional |= outer
        return result

    def _compute_binding_module_class(self, binding: Binding) -> ModuleClass | None:
        if binding.kind == "for" and not binding.path:
            return self._element_module_class(_iterated(binding), Site(binding.scope, binding.order), iterated=True)
        if binding.kind == "param" and binding.path == (0,) and binding.annotation is None:
            owner = self._method_class_of_self(cst.Name(binding.name), binding.scope)
            if owner is not None:
                return ModuleClass(owner, owner.name.value)
        if binding.annotation is not None:
            where = binding.scope.parent if binding.kind == "param" else binding.scope
            found = self.module_type(_outer_annotation(binding.annotation), where or binding.scope)
            if found is not None:
                return found
        if binding.kind == "assign" and binding.value is not None:
            value, rest = _element_at(binding.value, binding.path)
            site = Site(binding.scope, binding.order)
            if not rest:
                return self.module_class(value, site)
            function = self.callee(value.func, site.scope) if isinstance(value, cst.Call) else None
            return self._returned_module_class(function, rest) if function is not None else None
        if binding.kind == "param":
            parameter_of = binding.scope.node
            if isinstance(parameter_of, cst.FunctionDef) and binding.scope.parent is not None:
                bound = 1 if binding.scope.parent.kind == CLASS else 0
                classes = set()
                for call, site in self.arguments_of(parameter_of):
                    argument = argument_for(call, binding, bound)
                    if argument is not None:
                        classes.add(self.module_class(argument, site))
                classes.discard(None)
                return classes.pop() if len(classes) == 1 else None
        return None

    def _returned_module_class(self, function: cst.FunctionDef, path: tuple[int, ...]) -> ModuleClass | None:
        """The module class `function` returns (at `path` inside a returned tuple), when all agree."""
        key = (id(function), path)
        if key in self._in_progress_returns:
            return None  # a recursive function
        self._in_progress_returns.add(key)
        try:
            scope = self.index.body_scope(function)
            found = set()
            for ret in _returns(function):
                value, rest = _element_at(ret.value, path) if ret.value is not None else (None, path)
                found.add(self.module_class(value, Site(scope, 10**9)) if value is not None and not rest and scope
                          else None)
            return found.pop() if len(found) == 1 else None
        finally:
            self._in_progress_returns.discard(key)

    def _field_module_class(self, owner: cst.ClassDef, attr: str) -> ModuleClass | None:
        """The module class a field holds: what `__init__` assigns it when that is known (an
        `eqx.Module` or abstract-base annotation says less), else its annotation's class."""
        for value, site in self.init_assignments(owner, attr):
            found = self.module_class(value, site)
            if found is not None:
                return found
        class_scope = self.index.body_scope(owner)
        for binding in class_scope.bindings.get(attr, []) if class_scope is not None else []:
            if binding.annotation is not None and class_scope is not None:
                found = self.module_type(_outer_annotation(binding.annotation), class_scope)
                if found is not None:
                    return found
        return None

    def init_assignments(self, cls: cst.ClassDef, field: str) -> list[tuple[cst.BaseExpression, Site]]:
        """The values `cls.__init__` assigns to `self.<field>` in the statements of its body,
        each with where to read it (the end of `__init__`)."""
        init = _method(cls, "__init__")
        scope = self.index.body_scope(init) if init is not None else None
        if init is None or scope is None:
            return []
        return [(value, Site(scope, 10**9)) for value in _self_assignments(init, field)]

    def number(self, node: cst.BaseExpression, scope: Scope) -> float | None:
        """The number `node` always evaluates to (odelint.analysis.constants), else None."""
        from odelint.analysis.constants import constant_number
        return constant_number(self, node, scope)

    def structure(self, node: cst.BaseExpression, site: Site) -> str | None:
        """`list`, `tuple`, `dict` or `array`: the pytree structure `node` visibly has
        (odelint.analysis.structure), else None."""
        from odelint.analysis.structure import structure
        return structure(self, node, site)

    def returned_structure(self, function: cst.FunctionDef | cst.Lambda) -> str | None:
        """The structure all of `function`'s returns visibly have (a lambda's body), else None."""
        from odelint.analysis.structure import returned_structure
        values: list[cst.BaseExpression | None] = (
            [function.body] if isinstance(function, cst.Lambda) else [r.value for r in _returns(function)])
        return returned_structure(self, function, values)

    # -- value kinds ---------------------------------------------------------------------

    def kind(self, node: cst.BaseExpression, site: Site) -> Kind:
        """What kind of value `node` evaluates to at `site`."""
        kind = type(node)  # exact types first (the common cases): an ABC's isinstance is slower
        if kind is cst.Name:
            name = cast(cst.Name, node).value
            if name in _LITERAL_NAMES and not self.lookup(name, site.scope):
                return Kind.PLAIN
            return self._name_kind(name, site)
        if kind is cst.Call:
            return self._call_kind(cast(cst.Call, node), site)
        if kind is cst.Subscript:
            return self._subscript_kind(cast(cst.Subscript, node), site)
        if kind is cst.Attribute:
            return self._attribute_kind(cast(cst.Attribute, node), site)
        if isinstance(node, (cst.BaseNumber, cst.BaseString)):
            return Kind.PLAIN
        if isinstance(node, cst.Lambda):
            return Kind.FUNCTION
        if isinstance(node, (cst.BinaryOperation, cst.UnaryOperation)):
            return self._arithmetic_kind(node, site)
        if isinstance(node, (cst.Dict, cst.List, cst.Tuple, cst.Set, cst.DictComp, cst.ListComp)):
            return Kind.OTHER
        return Kind.UNKNOWN

    def is_module(self, node: cst.BaseExpression, site: Site) -> bool:
        return self.kind(node, site) is Kind.MODULE

    def _name_kind(self, name: str, site: Site) -> Kind:
        bindings = self.lookup(name, site.scope)
        if not bindings:
            return Kind.UNKNOWN
        if bindings[0].scope is site.scope:
            before = [b for b in bindings if b.order < site.order]
            if before:
                last = self.binding_kind(before[-1])
                if last is not Kind.UNKNOWN:
                    return last
        kinds = {self.binding_kind(b) for b in bindings}
        if Kind.MODULE in kinds and Kind.FILTERED not in kinds:
            return Kind.MODULE
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def binding_kind(self, binding: Binding) -> Kind:
        key = id(binding)
        if key in self._binding_kinds:
            return self._binding_kinds[key]
        self._binding_kinds[key] = Kind.UNKNOWN  # cycle guard
        result = self._compute_binding_kind(binding)
        self._binding_kinds[key] = result
        return result

    def _compute_binding_kind(self, binding: Binding) -> Kind:
        if binding.kind == "def":
            return Kind.FUNCTION
        if binding.kind in ("import", "class"):
            return Kind.OTHER
        if binding.annotation is not None:
            # parameter annotations are evaluated where the function is defined
            where = binding.scope.parent if binding.kind == "param" else binding.scope
            declared = self.annotation_kind(binding.annotation, where or binding.scope)
            if declared is not Kind.UNKNOWN:
                return declared
        if binding.kind == "param":
            if binding.path == (0,) and self._method_class_of_self(cst.Name(binding.name), binding.scope) is not None:
                owner = self._method_class_of_self(cst.Name(binding.name), binding.scope)
                class_binding = self.binding_of(owner) if owner is not None else None
                if class_binding is not None and self.is_module_class(class_binding):
                    return Kind.MODULE
            return self._param_kind(binding)
        if binding.kind == "for" and not binding.path:
            return self._element_kind(_iterated(binding), Site(binding.scope, binding.order), iterated=True)
        if binding.kind != "assign" or binding.value is None:
            return Kind.UNKNOWN
        site = Site(binding.scope, binding.order)
        value = binding.value
        for depth, position in enumerate(binding.path):
            if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements):
                value = value.elements[position].value
            else:
                return self._unpacked_call_kind(value, binding.path[depth:], site)
        return self.kind(value, site)

    def annotation_kind(self, annotation: cst.BaseExpression, scope: Scope) -> Kind:
        """The kind an annotation declares: `jax.Array`, `Float[Array, "n"]` -> ARRAY,
        `PRNGKeyArray` -> KEY, `Callable[...]` -> FUNCTION, a module class -> MODULE."""
        outer = _outer_annotation(annotation)
        if self.is_module_type(outer, scope):
            return Kind.MODULE
        declared = jax_api.annotation_kind(self.qualname(outer, scope))
        if declared is None and isinstance(outer, cst.Name) and outer.value in ("float", "int", "bool", "str"):
            return Kind.PLAIN if not self.lookup(outer.value, scope) else Kind.UNKNOWN
        return {"array": Kind.ARRAY, "key": Kind.KEY, "callable": Kind.FUNCTION}.get(declared or "", Kind.UNKNOWN)

    def _unpacked_call_kind(self, value: cst.BaseExpression, path: tuple[int, ...], site: Site) -> Kind:
        if not isinstance(value, cst.Call) or not path:
            return Kind.UNKNOWN
        func = value.func
        if isinstance(func, cst.Call):  # eqx.nn.make_with_state(Cls)(...)
            func = func.func
        qualname = self.qualname(func, site.scope)
        if len(path) == 1:
            if self._filtered_gradient(value, path, site):
                return Kind.FILTERED
            if qualname == "equinox.partition":
                return Kind.FILTERED if path == (0,) else Kind.OTHER
            if qualname == "equinox.nn.make_with_state":
                return Kind.MODULE if path == (0,) else Kind.OTHER
            if qualname is not None and jax_api.returns_key(qualname):
                return Kind.KEY
        function = self.callee(value.func, site.scope)
        if function is not None:
            return self._return_kind(function, path)
        return Kind.UNKNOWN

    def _call_kind(self, node: cst.Call, site: Site) -> Kind:
        qualname = self.qualname(node.func, site.scope)
        if qualname == "equinox.filter" or self._filtered_gradient(node, (), site):
            return Kind.FILTERED
        if qualname in _KIND_PRESERVING:
            argument = argument_at(node, None, _KIND_PRESERVING[qualname])
            return self.kind(argument.value, site) if argument is not None else Kind.UNKNOWN
        if self.is_module_type(node.func, site.scope):
            return Kind.MODULE
        if qualname is not None:
            return self._library_call_kind(node, qualname, site)
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in _ARRAY_METHODS:
            if self.kind(_at_receiver(node.func.value), site) is Kind.ARRAY:
                return Kind.ARRAY
        function = self.callee(node.func, site.scope)
        if function is not None:
            return self._return_kind(function, ())
        return Kind.UNKNOWN

    def _filtered_gradient(self, node: cst.Call, path: tuple[int, ...], site: Site) -> bool:
        """Is `node` at `path` the gradient an Equinox filtered transform takes with respect to
        a module (`eqx.filter_grad(loss)(model)`, `eqx.filter_value_and_grad(loss)(model)[1]`)?
        It has the module's structure with `None` where the module holds no arrays."""
        inner = node.func
        if not isinstance(inner, cst.Call):
            return False
        found = jax_api.transform(self.qualname(inner.func, site.scope))
        if found is None or not found.filtered or found.gradient is None:
            return False
        aux = keyword_arg(inner, "has_aux")
        has_aux = aux is not None and not (isinstance(aux.value, cst.Name) and aux.value.value == "False")
        expected = (1,) if found.gradient == "second" else ((0,) if has_aux else ())
        first = argument_at(node, None, 0)
        return path == expected and first is not None and self.is_module(first.value, site)

    def _library_call_kind(self, node: cst.Call, qualname: str, site: Site) -> Kind:
        if jax_api.returns_key(qualname):
            return Kind.KEY
        if jax_api.returns_array(qualname):
            return Kind.ARRAY
        found = jax_api.transform(qualname)
        if found is not None and not found.calls_now:
            return Kind.FUNCTION
        module, _, name = qualname.rpartition(".")
        if module == "optax" and name[:1].islower() and name not in _OPTAX_NOT_TRANSFORMATIONS:
            return Kind.FUNCTION if "schedule" in name or name.endswith("_decay") else Kind.OPTAX
        if module == "functools" and name == "partial":
            return Kind.FUNCTION
        return Kind.UNKNOWN

    def _subscript_kind(self, node: cst.Subscript, site: Site) -> Kind:
        if isinstance(node.value, cst.Call) and len(node.slice) == 1:
            index = node.slice[0].slice
            position = literals.integer(index.value) if isinstance(index, cst.Index) else None
            if position is not None and position >= 0:
                found = self._unpacked_call_kind(node.value, (position,), site)
                if found is not Kind.UNKNOWN:
                    return found
        inner = self.kind(node.value, site)
        if inner in (Kind.ARRAY, Kind.KEY):
            return inner
        return self._element_kind(node.value, site) if _single_index(node) else Kind.UNKNOWN

    def _element_kind(self, container: cst.BaseExpression | None, site: Site, iterated: bool = False) -> Kind:
        """The kind of what a container holds (what iterating it gives, when `iterated`): a
        module if any element is one, else the one kind all its elements agree on."""
        kinds = {self.kind(element, where) for element, where in self.elements(container, site, iterated=iterated)}
        if Kind.MODULE in kinds:
            return Kind.MODULE
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def _attribute_kind(self, node: cst.Attribute, site: Site) -> Kind:
        """`self.model` inside a method: the class's annotation or `__init__` assignment;
        `x.T` of an array is an array, `x.shape` a plain value."""
        cls = self._method_class_of_self(node.value, site.scope)
        if cls is None:
            if self.qualname(node, site.scope) is None and self.kind(node.value, site) is Kind.ARRAY:
                if jax_api.static_attribute(node.attr.value):
                    return Kind.PLAIN
                return Kind.ARRAY if node.attr.value in ("T", "mT", "real", "imag") else Kind.UNKNOWN
            return Kind.UNKNOWN
        attr = node.attr.value
        class_scope = self.index.body_scope(cls)
        for binding in class_scope.bindings.get(attr, []) if class_scope is not None else []:
            if binding.annotation is not None and class_scope is not None:
                declared = self.annotation_kind(binding.annotation, class_scope)
                if declared is not Kind.UNKNOWN:
                    return declared
        kinds = {self.kind(value, site) for value, site in self.init_assignments(cls, attr)}
        if Kind.MODULE in kinds:
            return Kind.MODULE
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def _arithmetic_kind(self, node: cst.BinaryOperation | cst.UnaryOperation, site: Site) -> Kind:
        operands = [node.left, node.right] if isinstance(node, cst.BinaryOperation) else [node.expression]
        kinds = {self.kind(operand, site) for operand in operands}
        if Kind.ARRAY in kinds and kinds <= {Kind.ARRAY, Kind.PLAIN, Kind.UNKNOWN}:
            return Kind.ARRAY
        return Kind.PLAIN if kinds == {Kind.PLAIN} else Kind.UNKNOWN

    def _method_class_of_self(self, node: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
        if not isinstance(node, cst.Name):
            return None
        bindings = self.lookup(node.value, scope)
        if len(bindings) != 1 or bindings[0].kind != "param" or bindings[0].path != (0,):
            return None
        function_scope = bindings[0].scope
        parent = function_scope.parent
        if function_scope.kind == FUNCTION and parent is not None and parent.kind == CLASS:
            if any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
                   for d in function_scope.node.decorators):  # type: ignore[attr-defined]
                return None
            return parent.node  # type: ignore[return-value]
        return None

    def _return_kind(self, function: cst.FunctionDef, path: tuple[int, ...]) -> Kind:
        """The kind of what `function` returns (at `path` inside a returned tuple), when all
        its returns agree."""
        key = (id(function), path)
        if key not in self._returns:
            self._returns[key] = Kind.UNKNOWN
            scope = self.index.body_scope(function)
            kinds = set()
            for ret in _returns(function):
                value = ret.value
                for position in path:
                    if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements):
                        value = value.elements[position].value
                    else:
                        value = None
                        break
                kinds.add(self.kind(value, Site(scope, 10**9)) if value is not None and scope else Kind.UNKNOWN)
            self._returns[key] = kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        return self._returns[key]

    # -- calls between functions of the file ------------------------------------------

    def callee(self, func: cst.BaseExpression, scope: Scope) -> cst.FunctionDef | None:
        """The function of this file that calling `func` runs (seeing through jit/grad wrappers).

        Asked about most calls by several analyses, so each answer is remembered (but not one
        found while another is being worked out: `a = jit(b); b = jit(a)` answers None then)."""
        kind = type(func)
        if kind is cst.Name:  # a name means the same function wherever it stands in a scope
            name = cast(cst.Name, func).value
            named = self._name_callees.get((name, id(scope)))
            if named is not None:
                return named[1]
            found = self._find_callee(func, scope)
            if not self._in_progress:
                self._name_callees[(name, id(scope))] = (scope, found)
            return found
        if kind is not cst.Call:
            return None
        key = (id(func), id(scope))
        known = self._callees.get(key)
        if known is not None and known[0] is func:  # the node itself is kept: an id outlives no node
            return known[1]
        found = self._find_callee(func, scope)
        if not self._in_progress:
            self._callees[key] = (func, found)
        return found

    def _find_callee(self, func: cst.BaseExpression, scope: Scope) -> cst.FunctionDef | None:
        if type(func) is cst.Call:
            call = cast(cst.Call, func)
            qualname = self.qualname(call.func, scope)
            if qualname in function_wrappers() and call.args and call.args[0].keyword is None:
                return self.callee(call.args[0].value, scope)
            return None
        func = cast(cst.Name, func)
        # `step = jax.jit(step)` rebinds the name to the same function, wrapped
        bindings = [b for b in self.lookup(func.value, scope) if not self._rewraps(b)]
        if len(bindings) != 1:
            return None
        binding = bindings[0]
        if binding.kind == "def":
            return binding.node  # type: ignore[return-value]
        if binding.kind == "assign" and not binding.path and type(binding.value) is cst.Call:
            key = id(binding)
            if key in self._in_progress:
                return None
            self._in_progress.add(key)
            try:
                return self.callee(binding.value, binding.scope)
            finally:
                self._in_progress.discard(key)
        return None

    def _rewraps(self, binding: Binding) -> bool:
        """Is this `name = wrapper(name, ...)`, a function wrapper applied to the name it rebinds?"""
        value = binding.value
        if binding.kind != "assign" or binding.path or type(value) is not cst.Call or not value.args:
            return False
        first = value.args[0]
        return (first.keyword is None and not first.star and type(first.value) is cst.Name
                and first.value.value == binding.name
                and self.qualname(value.func, binding.scope) in function_wrappers())

    def calls_to(self, names: Collection[str]) -> list[tuple[cst.Call, Site]]:
        """The file's calls of the functions with these qualified names (a set: `jax.jit`,
        `jax.lax.scan`), in source order. Each call's callee is named once per file, so an
        analysis or rule after calls of known functions visits only those, not every call."""
        by_name = self._filed_calls()
        if len(names) == 1:
            return list(by_name.get(next(iter(names)), ()))
        found = [call for name in names for call in by_name.get(name, ())]
        found.sort(key=lambda call: call[1].order)
        return found

    def called_names(self) -> Collection[str]:
        """The qualified names of the functions this file calls, as `calls_to` files them."""
        return self._filed_calls().keys()

    def method_calls(self, names: Collection[str]) -> list[tuple[cst.Call, Site]]:
        """The file's calls of a method with one of these names (`x.update(...)`), whatever
        `x` is, in source order."""
        self._filed_calls()
        found = [call for name in names for call in self._calls_by_method.get(name, ())]
        found.sort(key=lambda call: call[1].order)
        return found

    def _filed_calls(self) -> dict[str, list[tuple[cst.Call, Site]]]:
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for call, site in self.index.of_type(cst.Call):
                func = call.func
                qualname = self.qualname(func, site.scope)
                if qualname is not None:
                    self._calls_by_name.setdefault(qualname, []).append((call, site))
                if type(func) is cst.Attribute:  # exact types: an ABC's isinstance is slower
                    self._calls_by_method.setdefault(cast(cst.Attribute, func).attr.value, []).append((call, site))
        return self._calls_by_name

    def calls_of(self, function: cst.FunctionDef) -> list[tuple[cst.Call, Site]]:
        if self._calls_by_callee is None:
            self._calls_by_callee = {}
            for call, site in self.index.of_type(cst.Call):
                target = self.callee(call.func, site.scope)
                if target is not None:
                    self._calls_by_callee.setdefault(id(target), []).append((call, site))
        return self._calls_by_callee.get(id(function), [])

    def arguments_of(self, function: cst.FunctionDef) -> list[tuple[cst.Call, Site]]:
        """The calls whose arguments reach `function`'s parameters: its own calls and, for an
        `__init__`, the calls that build its class (`Outer(inner)` gives `inner` to `__init__`)
        and the `super().__init__(...)` calls of its subclasses' `__init__` in this file."""
        scope = self.index.body_scope(function)
        owner = scope.parent if scope is not None else None
        if function.name.value != "__init__" or owner is None or owner.kind != CLASS:
            return self.calls_of(function)
        cls = cast(cst.ClassDef, owner.node)
        named = cls.name.value
        built = [(call, site) for call, site in self.index.calls_named(named)
                 if any(b.kind == "class" and b.node is cls for b in self.lookup(named, site.scope))]
        return self.calls_of(function) + built + self._super_initialisations(cls)

    def _super_initialisations(self, cls: cst.ClassDef) -> list[tuple[cst.Call, Site]]:
        """`super().__init__(...)` in the `__init__` of a class of this file whose base is `cls`."""
        from odelint.analysis.classes import named_class

        found = []
        for call, site in self.method_calls(("__init__",)):
            receiver = cast(cst.Attribute, call.func).value
            if not (isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name)
                    and receiver.func.value == "super" and not receiver.args):
                continue
            caller, subclass = site.scope, site.scope.parent
            if (caller.kind != FUNCTION or cast(cst.FunctionDef, caller.node).name.value != "__init__"
                    or subclass is None or subclass.kind != CLASS):
                continue
            where = subclass.parent or self.index.module_scope
            if any(named_class(self, base.value, where) is cls for base in cast(cst.ClassDef, subclass.node).bases):
                found.append((call, site))
        return found

    def _param_kind(self, binding: Binding) -> Kind:
        """What the calls of this file pass for a parameter: a module if any call passes one,
        else the one kind every call that is understood agrees on. A call that leaves the
        parameter out passes its default (`MLP()` for `activation=jax.nn.relu`)."""
        function = binding.scope.node
        if not isinstance(function, cst.FunctionDef) or binding.scope.parent is None:
            return Kind.UNKNOWN
        bound = 1 if binding.scope.parent.kind == CLASS else 0
        default = binding.node.default if isinstance(binding.node, cst.Param) else None
        kinds = set()
        for call, site in self.arguments_of(function):
            argument = argument_for(call, binding, bound)
            if argument is not None:
                kinds.add(self._passed_kind(argument, site))
            elif default is not None and not any(arg.star for arg in call.args):
                kinds.add(self._passed_kind(default, Site(binding.scope.parent, binding.order)))
        if Kind.MODULE in kinds:
            return Kind.MODULE
        kinds.discard(Kind.UNKNOWN)
        return kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN

    def _passed_kind(self, value: cst.BaseExpression, site: Site) -> Kind:
        """The kind of a value given to a parameter, where a library function named as a value
        (`jax.nn.relu`) is a function."""
        kind = self.kind(value, site)
        if kind is Kind.UNKNOWN and type(value) in (cst.Name, cst.Attribute):
            qualname = self.qualname(value, site.scope)
            if qualname is not None and jax_api.library_function(qualname):
                return Kind.FUNCTION
        return kind

    # -- optax ---------------------------------------------------------------------------

    def optax_constructors(self, node: cst.BaseExpression, site: Site) -> frozenset[str] | None:
        """The optax functions that built this optimiser (`chain(clip(1.), adamw(...))` gives
        {optax.chain, optax.clip, optax.adamw}); None when it is not traceable to optax."""
        found = self._optax_parts(node, site, set())
        return frozenset(found) if found else None

    def optax_unmasked_decay(self, node: cst.BaseExpression, site: Site) -> list[str]:
        """The decoupled weight decays in this optimiser that shrink every parameter it is
        given (`adamw(...)`, `add_decayed_weights(1e-4)` with no `mask` or `mask=None`, a decay
        not known to be zero); empty when a wrapper (`optax.masked`, `multi_transform`) may
        select them."""
        calls: list[tuple[str, cst.Call]] = []
        parts = self._optax_parts(node, site, set(), calls)
        if parts & jax_api.names("optax_selecting"):
            return []
        decays = jax_api.names_table("optax_decoupled_decay")
        found = set()
        for qualname, call in calls:
            if qualname not in decays:
                continue
            decay_at, default, mask_at = decays[qualname]
            decay = argument_at(call, "weight_decay", decay_at)
            rate = literals.number(decay.value) if decay is not None else default
            mask = argument_at(call, "mask", mask_at)
            if (mask is None or literals.is_none(mask.value)) and rate != 0:
                found.add(qualname)
        return sorted(found)

    def _optax_parts(self, node: cst.BaseExpression, site: Site, seen: set[int],
                     calls: list[tuple[str, cst.Call]] | None = None) -> set[str]:
        """`calls` collects the optax calls met, with the qualified name of each."""
        if id(node) in seen:
            return set()
        seen.add(id(node))
        parts: set[str] = set()
        if isinstance(node, cst.Call):
            parts = self._optax_parts(node.func, site, seen, calls)
            if parts:
                qualname = self.qualname(node.func, site.scope)
                if calls is not None and qualname is not None:
                    calls.append((qualname, node))
                for arg in node.args:
                    parts |= self._optax_parts(arg.value, site, seen, calls)
                momentum = argument_at(node, "momentum", 1) if parts == {"optax.sgd"} else None
                if momentum is not None and not (isinstance(momentum.value, cst.Name)
                                                 and momentum.value.value == "None"):
                    parts = {"optax.sgd+momentum"}  # sgd keeps a trace per parameter only with momentum
            return parts
        if isinstance(node, (cst.Attribute, cst.Name)):
            qualname = self.qualname(node, site.scope)
            if qualname and qualname.split(".")[0] == "optax":
                return {qualname}
            if isinstance(node, cst.Name):
                for binding in self.lookup(node.value, site.scope):
                    parts |= self._binding_optax_parts(binding, seen, calls)
                return parts
        if isinstance(node, (cst.List, cst.Tuple)):
            for element in node.elements:
                parts |= self._optax_parts(element.value, site, seen, calls)
            return parts
        if isinstance(node, cst.Dict):
            for item in node.elements:
                if isinstance(item, cst.DictElement):
                    parts |= self._optax_parts(item.value, site, seen, calls)
            return parts
        return set()

    def _binding_optax_parts(self, binding: Binding, seen: set[int],
                             calls: list[tuple[str, cst.Call]] | None = None) -> set[str]:
        """Follow a name to what built it: an assignment (through tuples returned by this
        file's functions: `net, opt = make(key)`), or what the calls pass for a parameter."""
        site = Site(binding.scope, binding.order)
        if binding.kind == "assign" and binding.value is not None:
            value, rest = _element_at(binding.value, binding.path)
            if not rest:
                return self._optax_parts(value, site, seen, calls)
            function = self.callee(value.func, site.scope) if isinstance(value, cst.Call) else None
            scope = self.index.body_scope(function) if function is not None else None
            parts: set[str] = set()
            for ret in _returns(function) if function is not None and scope is not None else ():
                element, left = _element_at(ret.value, rest) if ret.value is not None else (None, rest)
                if element is not None and not left and scope is not None:
                    parts |= self._optax_parts(element, Site(scope, 10**9), seen, calls)
            return parts
        parameter_of = binding.scope.node
        if binding.kind == "param" and isinstance(parameter_of, cst.FunctionDef) and binding.scope.parent is not None:
            bound = 1 if binding.scope.parent.kind == CLASS else 0
            parts = set()
            for call, call_site in self.calls_of(parameter_of):
                argument = argument_for(call, binding, bound)
                if argument is not None:
                    parts |= self._optax_parts(argument, call_site, seen, calls)
            return parts
        return set()

    def optax_keeps_param_state(self, node: cst.BaseExpression, site: Site) -> bool:
        """Does this optimiser's `init` build state per parameter (`zeros_like` over the
        params)? False only when every part is known to be stateless (`sgd` without
        momentum, `scale`, `clip_by_global_norm`, ...: lint/analysis/data/jax_api.toml)."""
        parts = self.optax_constructors(node, site)
        if not parts:
            return True
        stateless = jax_api.optax_stateless()
        return not all(part in stateless for part in parts)

    def may_be_optax(self, node: cst.BaseExpression, site: Site) -> bool:
        """Could this receiver be an optax optimiser? False only when we know it is not:
        it was built by a call that does not trace back to optax, or is a class, function
        or import of something else. Parameters and attributes stay possible."""
        if self.optax_constructors(node, site) or self.kind(node, site) is Kind.OPTAX:
            return True
        if isinstance(node, cst.Call):
            return False
        if isinstance(node, cst.Name):
            bindings = self.lookup(node.value, site.scope)
            return bool(bindings) and not any(
                b.kind in ("import", "def", "class") or isinstance(b.value, cst.Call) for b in bindings)
        return True

    def module_names_visible(self, site: Site) -> list[str]:
        """Names holding Equinox modules in the innermost scope around `site` that has any
        (a step function's `model` parameter hides the script's other models)."""
        scope: Scope | None = site.scope
        first = True
        while scope is not None:
            if scope.kind != CLASS or first:
                found = [name for name in scope.bindings if self._name_kind(name, site) is Kind.MODULE]
                if found:
                    return found
            scope = scope.parent
            first = False
        return []


_CONVENTIONAL_ALIASES = {"equinox": "eqx", "jax.numpy": "jnp", "jax.lax": "lax", "optax": "optax",
                         "diffrax": "diffrax", "jax": "jax"}


# Submodules that importing the package imports too (checked on jax 0.10, equinox 0.13,
# optax 0.2.8), so `import jax` is enough to write `jax.lax.stop_gradient`.
_LOADED_SUBMODULES = {
    "jax": frozenset({"numpy", "lax", "nn", "random", "tree_util", "tree", "scipy", "debug", "dtypes"}),
    "equinox": frozenset({"nn", "internal"}),
    "optax": frozenset({"contrib", "transforms", "tree_utils", "losses", "schedules", "tree"}),
}


def _reachable(imported: str, qualname: str) -> bool:
    """Can `qualname` be written as attributes of the imported name `imported`?"""
    if qualname == imported:
        return True
    if not qualname.startswith(imported + "."):
        return False
    rest = qualname[len(imported) + 1:].split(".")
    return len(rest) == 1 or (len(rest) == 2 and rest[0] in _LOADED_SUBMODULES.get(imported, ()))


def _attribute_chain(base: str, rest: str) -> cst.BaseExpression:
    """`jax` + `lax.stop_gradient` -> the expression `jax.lax.stop_gradient`."""
    expression: cst.BaseExpression = cst.parse_expression(base)
    for part in filter(None, rest.split(".")):
        expression = cst.Attribute(expression, cst.Name(part))
    return expression


def loaded_names(node: cst.CSTNode, into_nested: bool = False) -> Iterator[cst.Name]:
    """Names whose values `node` reads (not attribute names or keywords); lambdas and
    comprehensions are entered only with `into_nested` (what a closure captures)."""
    nested = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
    stack = [node]
    while stack:
        current = stack.pop()
        kind = type(current)  # exact types: an ABC's isinstance is slower
        if kind is cst.Name:
            yield cast(cst.Name, current)
        elif kind is cst.Attribute:
            stack.append(cast(cst.Attribute, current).value)
        elif kind is cst.Arg:
            stack.append(cast(cst.Arg, current).value)
        elif into_nested or not isinstance(current, nested):
            stack.extend(children_of(current))


def _returns(function: cst.FunctionDef) -> Iterator[cst.Return]:
    """Return statements of this function, not of functions nested in it."""
    return own_nodes(function.body, cst.Return)


def _self_assignments(function: cst.FunctionDef, attr: str) -> Iterator[cst.BaseExpression]:
    """Values assigned to `self.<attr>` at the top level of a method body."""
    for statement in function.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                for target in small.targets:
                    if (isinstance(target.target, cst.Attribute) and target.target.attr.value == attr
                            and isinstance(target.target.value, cst.Name)):
                        yield small.value


def method_call(call: cst.Call, method: str) -> cst.BaseExpression | None:
    """The receiver of `receiver.method(...)`, else None."""
    func = call.func
    if type(func) is cst.Attribute and func.attr.value == method:  # exact types: asked of every call
        return func.value
    return None




# Array methods whose result is an array (`x.at[i].set(v)`, `x.reshape(...)`, `x.sum()`).
_ARRAY_METHODS = frozenset({"set", "add", "multiply", "divide", "power", "min", "max", "apply", "get",
                            "reshape", "astype", "sum", "mean", "transpose", "squeeze", "ravel", "flatten",
                            "clip", "round", "dot", "conj", "cumsum", "prod", "std", "var", "swapaxes"})


def _at_receiver(node: cst.BaseExpression) -> cst.BaseExpression:
    """`x` in `x.at[i]` (the receiver an `.at[...]` update reads)."""
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute) and node.value.attr.value == "at":
        return node.value.value
    return node


def _outer_annotation(annotation: cst.BaseExpression) -> cst.BaseExpression:
    """`Float[Array, "n"]` -> `Float`; a string annotation is left as it is."""
    return annotation.value if isinstance(annotation, cst.Subscript) else annotation


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    for item in cls.body.body:
        if isinstance(item, cst.FunctionDef) and item.name.value == name:
            return item
    return None


@dataclasses.dataclass(frozen=True, eq=False)
class ModuleClass:
    """An Equinox module class: `node` is its definition when it is a class of this file,
    `name` its qualified name (library classes) or its name in this file."""

    node: cst.ClassDef | None
    name: str
    facts: Facts | None = None   # set for a class of another file of the project: its file's facts
    # a container of layers (`eqx.nn.Sequential([...])`): the call that built this instance
    built: tuple[cst.Call, Site] | None = None

    def defined_in(self, importer: str | None) -> str | None:
        """The file of another project file's class, as seen from the file `importer`
        (`models/mlp.py`), for messages that say where a value came from; None for a class of
        `importer` itself or of a library."""
        where = self.facts.path if self.facts is not None else None
        if where is None or importer is None or os.path.abspath(where) == os.path.abspath(importer):
            return None
        return os.path.relpath(where, os.path.dirname(os.path.abspath(importer))).replace(os.sep, "/")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModuleClass) or (self.built is None) is not (other.built is None):
            return False
        if self.built is not None and other.built is not None:
            return self.built[0] is other.built[0]
        return self.node is other.node if self.node or other.node else self.name == other.name

    def __hash__(self) -> int:
        return hash((id(self.node), self.name, id(self.built[0]) if self.built else 0))


def _element_at(value: cst.BaseExpression, path: tuple[int, ...]) -> tuple[cst.BaseExpression, tuple[int, ...]]:
    """The element of a tuple/list display at `path`, and the part of the path left when the
    display ends (`a, b = make()` leaves the whole path on the call)."""
    for depth, position in enumerate(path):
        if isinstance(value, (cst.Tuple, cst.List)) and position < len(value.elements):
            value = value.elements[position].value
        else:
            return value, path[depth:]
    return value, ()


def _single_index(node: cst.Subscript) -> bool:
    """`xs[i]`, one element (not a slice `xs[1:]`, which is a container again)."""
    return len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)


def _iterated(binding: Binding) -> cst.BaseExpression | None:
    """What a `for` binding iterates over (`blocks` in `for block in blocks`)."""
    node = binding.node
    return node.iter if isinstance(node, (cst.For, cst.CompFor)) else None
