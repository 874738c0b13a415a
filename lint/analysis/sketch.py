"""A cheap first look at a file with CPython's own parser, to rule rules out before LibCST.

Parsing with `ast` costs about a tenth of a LibCST parse, and most files of a JAX code base
hold nothing any rule could report: no transform ever gets a function of the file, no
Equinox module is in sight. A `Sketch` answers, for the whole file at once and always
erring towards "maybe", the questions the rules' declared needs ask (odelint.analysis.needs,
and the named facts of odelint.analysis.sketch_facts): which dotted
names the file may refer to (through imports and `x = a.b` aliases, like `Facts.qualname`),
where code sits (loops, functions called in loops), and, in their own modules, which
functions may run traced or differentiated (sketch_reach), which values may be JAX arrays
(sketch_arrays), whether an Equinox module may be in play (sketch_modules) and which values
may be modules with a function or string leaf (sketch_module_classes).
A declaration that does not hold must mean the rule cannot fire: tests/test_gate.py lints every
fixture, program and example with and without it; tests/test_sketch.py pins each fact.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast, overload

from odelint.analysis import jax_api
from odelint.analysis.deprecated_apis import within_module

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
# `def f[T]()` (Python 3.12): a type parameter binds its name in the function's annotation scope
_TYPE_PARAMETERS: tuple[type[ast.AST], ...] = tuple(
    getattr(ast, kind) for kind in ("TypeVar", "ParamSpec", "TypeVarTuple") if hasattr(ast, kind))
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)

if TYPE_CHECKING:
    from odelint.analysis.project import ImportsOf
    from odelint.analysis.sketch_arrays import SketchArrays
    from odelint.analysis.sketch_module_classes import SketchModuleClasses
    from odelint.analysis.sketch_reach import SketchReach

_Node = TypeVar("_Node", bound=ast.AST)
_Other = TypeVar("_Other", bound=ast.AST)
_Third = TypeVar("_Third", bound=ast.AST)


def imported(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str | None, str]]:
    """What an import statement imports: each module it may load (`from m import n`: m, and
    m.n, which may be a submodule), with the name it binds (None for none) and what that name
    stands for (`import a.b` binds `a` to a; `from . import n as k` binds `k` to .n)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            top = alias.name.split(".")[0]
            yield (alias.name, alias.asname, alias.name) if alias.asname else (alias.name, top, top)
        return
    module = "." * node.level + (node.module or "")
    yield module, None, module
    for alias in node.names:
        full = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
        yield full, alias.asname or alias.name, full


class Sketch:
    """What a file may hold, from its `ast`: every answer may say yes too often, never too rarely."""

    def __init__(self, tree: ast.Module, path: str | None = None, options: frozenset[str] = frozenset()) -> None:
        self.tree = tree
        self.path = path
        self.options = options  # the settings rules read (FileContext.options)
        self._aliases: dict[str, list[str]] = {}        # name -> the dotted names it may stand for
        self._assigned: dict[str, list[ast.expr]] = {}  # name -> values assigned to it (or into it) anywhere
        self._bound: dict[str, list[ast.expr]] = {}     # name -> values assigned to the name itself
        # name -> functions (methods too) of that name
        self.defs: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.identifiers: set[str] = set()              # every Name and attribute name used
        self.calls: list[ast.Call] = []
        self.subscript_stores: list[ast.Subscript] = []   # `x[i] = ...`, `x[i] += ...` targets
        self.has_loops = False                            # a `for`, `while` or comprehension
        self.imported_modules: list[str] = []           # `import m`, `from m import n`: m and m.n
        self._qualnames: dict[int, frozenset[str]] = {}
        self._contained: dict[int, tuple[frozenset[str], tuple[FunctionNode, ...]]] = {}
        self._nodes: dict[type, list[ast.AST]] = {}
        self._parents: dict[int, ast.AST] = {}
        self._collect()
        self._by_name: dict[str, frozenset[str]] = {}
        self._by_attr: dict[str, list[ast.Attribute]] | None = None
        self._assigned_attributes: dict[str, list[ast.expr]] | None = None
        self._call_groups: dict[str | None, list[tuple[int, ast.Call]]] | None = None
        self._meanings: tuple[frozenset[str], frozenset[str]] | None = None
        self._imported: frozenset[str] | None = None
        self._bound_otherwise: frozenset[str] | None = None  # names bound other than by an import
        self._modules: bool | None = None
        self._reach: SketchReach | None = None
        self._arrays: SketchArrays | None = None
        self._module_classes: SketchModuleClasses | None = None
        self._imports: ImportsOf | None = None

    def release(self) -> None:
        """Drop what the Sketch holds once the gate has its answer: its analyses refer back to
        it, so without this only the cyclic collector would free them (and the file's tree)."""
        if self._module_classes is not None:
            self._module_classes.release()  # and the other files' Sketches it read
        self.__dict__.clear()

    # -- names ----------------------------------------------------------------------------

    def _collect(self) -> None:
        nodes = self._nodes
        parents = self._parents
        node_type = ast.AST
        stack: list[ast.AST] = [self.tree]
        while stack:  # one pass: each node filed under its type, with its parent
            node = stack.pop()
            kind = type(node)
            if kind in nodes:
                nodes[kind].append(node)
            else:
                nodes[kind] = [node]
            fields = _CHILD_FIELDS.get(kind)
            for field in _child_fields(kind) if fields is None else fields:
                value = getattr(node, field, None)
                if type(value) is list:
                    for item in value:
                        if isinstance(item, node_type):
                            parents[id(item)] = node
                            stack.append(item)
                elif isinstance(value, node_type):
                    parents[id(value)] = node
                    stack.append(value)
                elif value is not None:
                    _holds_no_node(kind, field)
        for name in self.of_type(ast.Name):
            self.identifiers.add(name.id)
        for attribute in self.of_type(ast.Attribute):
            self.identifiers.add(attribute.attr)
        self.calls = self.of_type(ast.Call)
        self.subscript_stores = [node for node in self.of_type(ast.Subscript)
                                 if isinstance(node.ctx, ast.Store)]
        self.has_loops = any(kind in nodes for kind in _LOOPS)
        for function in self.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            self.defs.setdefault(function.name, []).append(function)
        for cls in self.of_type(ast.ClassDef):
            self.classes.setdefault(cls.name, []).append(cls)
        for node in self.of_type(ast.Import, ast.ImportFrom):
            for module, bound, meaning in imported(node):
                self.imported_modules.append(module)
                if bound is not None:
                    self._aliases.setdefault(bound, []).append(meaning)
        for node in self.of_type(ast.Assign, ast.AnnAssign, ast.NamedExpr):
            if node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if type(target) is ast.Name:  # most targets: no walk (a generator per target)
                    self._assigned.setdefault(target.id, []).append(node.value)
                    self._bound.setdefault(target.id, []).append(node.value)
                    continue
                for part in walk(target):
                    if type(part) is ast.Name:
                        self._assigned.setdefault(part.id, []).append(node.value)
                        if type(part.ctx) is ast.Store:
                            self._bound.setdefault(part.id, []).append(node.value)

    @overload
    def of_type(self, first: type[_Node], /) -> list[_Node]: ...
    @overload
    def of_type(self, first: type[_Node], second: type[_Other], /) -> list[_Node | _Other]: ...
    @overload
    def of_type(self, first: type[_Node], second: type[_Other], third: type[_Third], /
                ) -> list[_Node | _Other | _Third]: ...
    def of_type(self, *types: type[ast.AST]) -> list[Any]:
        """Every node of these exact types in the file, in no particular order."""
        if len(types) == 1:
            return self._nodes.get(types[0], [])
        return [node for kind in types for node in self._nodes.get(kind, ())]

    def assigned(self, name: str) -> list[ast.expr]:
        """The values assigned to `name` anywhere in the file (`x = ...`, tuple targets included),
        and those stored into an attribute or item of it (`x.a = ...`)."""
        return self._assigned.get(name, [])

    def bound(self, name: str) -> list[ast.expr]:
        """The values assigned to `name` itself anywhere in the file (`x = ...`, `a, x = ...`),
        not those stored into an attribute or item of it (`x.a = ...`, `x[i] = ...`)."""
        return self._bound.get(name, [])

    def assigned_attribute(self, attr: str) -> list[ast.expr]:
        """The values assigned to an attribute of this name anywhere in the file (`self.attr = ...`)."""
        if self._assigned_attributes is None:
            self._assigned_attributes = {}
            for node in self.of_type(ast.Assign, ast.AnnAssign):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Attribute) and node.value is not None:
                        self._assigned_attributes.setdefault(target.attr, []).append(node.value)
        return self._assigned_attributes.get(attr, [])

    def qualnames(self, node: ast.expr) -> frozenset[str]:
        """The dotted names `node` may refer to (`jnp.where` -> jax.numpy.where)."""
        if isinstance(node, ast.Name):
            return self._name_qualnames(node.id)
        key = id(node)
        if key not in self._qualnames:
            self._qualnames[key] = frozenset()  # guards `a = b; b = a`
            self._qualnames[key] = frozenset(self._compute_qualnames(node))
        return self._qualnames[key]

    def _compute_qualnames(self, node: ast.expr) -> Iterator[str]:
        if isinstance(node, ast.Attribute):
            for base in self.qualnames(node.value):
                yield jax_api.canonical(f"{base}.{node.attr}")

    def _name_qualnames(self, name: str) -> frozenset[str]:
        """A name means the same wherever it is used (over the whole file: may say too much)."""
        found = self._by_name.get(name)
        if found is None:
            self._by_name[name] = frozenset()  # guards `a = b; b = a`
            meanings = {jax_api.canonical(imported) for imported in self._aliases.get(name, ())}
            for value in self._assigned.get(name, ()):
                if isinstance(value, (ast.Name, ast.Attribute)):
                    meanings.update(self.qualnames(value))
            found = self._by_name[name] = frozenset(meanings)
        return found

    def refers_to(self, *names: str) -> bool:
        """Does the file refer to one of these dotted names, or to something inside one?"""
        return any(self._refers(name, inside=True) for name in names)

    def mentions(self, name: str) -> bool:
        """Does the file refer to exactly this dotted name?"""
        return self._refers(name, inside=False)

    def _refers(self, name: str, inside: bool) -> bool:
        """A chain that refers to `name` (or inside it) has a sub-chain ending in `name`'s last
        part, or is a name bound to it: only those are resolved, not every name of the file."""
        def matches(found: str) -> bool:
            return found == name or (inside and found.startswith(name + "."))

        exact, within = self._bound_meanings()
        if name in (within if inside else exact):
            return True
        last = name.rpartition(".")[2]
        return any(matches(found) for node in self._attributes().get(last, ()) for found in self.qualnames(node))

    def _bound_meanings(self) -> tuple[frozenset[str], frozenset[str]]:
        """What the names the file binds and uses may mean, and every leading part of those
        meanings (`jax.numpy.where`: jax, jax.numpy): built once, as declarations ask
        `refers_to` and `mentions` dozens of times per file."""
        if self._meanings is None:
            used = (self._aliases.keys() | self._assigned.keys()) & self.identifiers
            exact = frozenset(found for ident in used for found in self._name_qualnames(ident))
            self._meanings = exact, _with_leading_parts(exact)
        return self._meanings

    def _attributes(self) -> dict[str, list[ast.Attribute]]:
        if self._by_attr is None:
            self._by_attr = {}
            for node in self.of_type(ast.Attribute):
                self._by_attr.setdefault(node.attr, []).append(node)
        return self._by_attr

    def calls_to(self, names: Iterable[str]) -> list[ast.Call]:
        """Calls whose function may be one of these dotted names, in the file's order: a call of
        a bare name (which may be an alias of anything) or of an attribute of the name's last part."""
        wanted = frozenset(names)
        groups = self._calls_by_last()
        candidates = [*groups.get(None, ()), *(call for last in {name.rpartition(".")[2] for name in wanted}
                                                for call in groups.get(last, ()))]
        found = [(number, call) for number, call in candidates if self.qualnames(call.func) & wanted]
        return [call for _, call in sorted(found, key=lambda pair: pair[0])]

    def _calls_by_last(self) -> dict[str | None, list[tuple[int, ast.Call]]]:
        """Calls (with their place among `calls`) by the attribute they call (None: a bare name);
        built once, as every rule's declaration asks `calls_to` of the same file."""
        if self._call_groups is None:
            self._call_groups = {}
            for number, call in enumerate(self.calls):
                func = call.func
                if isinstance(func, (ast.Name, ast.Attribute)):
                    last = func.attr if isinstance(func, ast.Attribute) else None
                    self._call_groups.setdefault(last, []).append((number, call))
        return self._call_groups

    def names_in(self, node: ast.AST) -> frozenset[str]:
        """Every Name and attribute name inside `node` (itself included)."""
        return self._contents(node)[0]

    def functions_in(self, node: ast.AST) -> tuple[FunctionNode, ...]:
        """The `def`s and lambdas inside `node` (itself included)."""
        return self._contents(node)[1]

    def _contents(self, node: ast.AST) -> tuple[frozenset[str], tuple[FunctionNode, ...]]:
        """`names_in` and `functions_in`, from one walk of `node`, remembered."""
        key = id(node)
        found = self._contained.get(key)
        if found is None:
            names, functions = set(), []
            for inner in walk(node):
                kind = type(inner)
                if kind is ast.Name:
                    names.add(inner.id)  # type: ignore[attr-defined]
                elif kind is ast.Attribute:
                    names.add(inner.attr)  # type: ignore[attr-defined]
                elif kind in _FUNCTIONS:
                    functions.append(inner)
            found = self._contained[key] = (frozenset(names), tuple(functions))  # type: ignore[arg-type]
        return found

    def binds(self, name: str) -> bool:
        """Does the file bind `name` itself (import, assignment, def or class)?"""
        return name in self._aliases or name in self._assigned or name in self.defs or name in self.classes

    def imported_only(self, name: str) -> bool:
        """Is every binding of `name` in the file an import, or has it none (a builtin)? Then a
        read of it finds no value the file computes (`arrays._binding_array_valued`: only a
        parameter or an assignment may hold an array): `math` in `math.prod(shape)`."""
        if self._bound_otherwise is None:
            found = {node.id for node in self.of_type(ast.Name) if type(node.ctx) is not ast.Load}
            found.update(arg.arg for arg in self.of_type(ast.arg))
            found.update(self.defs.keys() | self.classes.keys())
            for kind in (ast.ExceptHandler, ast.MatchAs, ast.MatchStar, *_TYPE_PARAMETERS):
                found.update(bound for node in self._nodes.get(kind, ()) if (bound := getattr(node, "name", None)))
            found.update(node.rest for node in self.of_type(ast.MatchMapping) if node.rest)
            self._bound_otherwise = frozenset(found)
        return name not in self._bound_otherwise

    def imports(self, name: str) -> bool:
        """Does an import statement name `name`, or something inside it?"""
        if self._imported is None:
            self._imported = _with_leading_parts(self.imported_modules)
        return name in self._imported

    def imports_module(self, name: str, from_parent: bool) -> bool:
        """Does an import statement import the module `name` or one inside it (`import a.b`,
        `from a.b import c`), or, with `from_parent`, import it from its package (`from a
        import b`)? Relative imports name no package's module."""
        if any(within_module(alias.name, name) for node in self.of_type(ast.Import) for alias in node.names):
            return True
        for statement in self.of_type(ast.ImportFrom):
            module = statement.module
            if statement.level or module is None:
                continue
            if within_module(module, name) or (from_parent and any(
                    f"{module}.{alias.name}" == name for alias in statement.names)):
                return True
        return False

    # -- where a node is -------------------------------------------------------------------

    def project_file(self, module: str) -> str | None:
        """The file of the project that `import <module>` means here (odelint.analysis.project),
        None for none (a library's module, or no path to look from)."""
        imports = self.project_imports
        return imports.file(module) if imports is not None else None

    @property
    def project_imports(self) -> ImportsOf | None:
        """Where this file's imports lead (None for a file of no path)."""
        from odelint.analysis import project

        if self._imports is None and self.path is not None:
            self._imports = project.ImportsOf(self.path)
        return self._imports

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self._parents.get(id(node))

    def in_loop(self, node: ast.AST) -> bool:
        """Is `node` inside a loop or comprehension of its function (or of the module)?"""
        current = self.parent(node)
        while current is not None and not isinstance(current, (*_FUNCTIONS, ast.ClassDef)):
            if isinstance(current, (*_LOOPS, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                return True
            current = self.parent(current)
        return False

    def enclosing_function(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The `def` around `node` (lambdas are part of the function they are in)."""
        current = self.parent(node)
        while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
            current = self.parent(current)
        return current

    def repeats(self, node: ast.AST) -> bool:
        """May `node` run again and again: in a loop, or in a function called in a loop?"""
        if self.in_loop(node):
            return True
        function = self.enclosing_function(node)
        return function is not None and self.called_in_loop(function)

    def called_in_loop(self, function: FunctionNode) -> bool:
        """Is a function of this name called (or named) anywhere inside a loop?"""
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return any(any(function in self.reach.functions_named(name) for name in self.names_in(call.func))
                   and self.in_loop(call) for call in self.calls)

    # -- facts kept in their own modules ---------------------------------------------------

    def may_hold_modules(self) -> bool:
        """Can a value of this file be an Equinox module? Only if the file refers to Equinox or
        to a library of modules (diffrax, lineax, ...), or imports a project file that may."""
        from odelint.analysis.sketch_modules import may_hold_modules

        if self._modules is None:
            self._modules = may_hold_modules(self)
        return self._modules

    def traced_functions(self) -> list[FunctionNode]:
        """Functions that may run on tracers: handed to or decorated by a tracing transform or
        given to `lax.scan`/a diffrax term, and whatever those call or pass on."""
        return self.reach.traced()

    def differentiated_functions(self) -> list[FunctionNode]:
        """Functions that may run under differentiation (and the methods of a diffrax progress meter)."""
        return self.reach.differentiated()

    def in_traced(self, node: ast.AST) -> bool:
        """Is `node` in the code of a function that may run traced?"""
        return self.reach.in_traced(node)

    def nodes_in(self, functions: Iterable[FunctionNode], *types: type[_Node]) -> Iterator[_Node]:
        """Nodes of these types inside the functions (each function's own code; the functions
        nested in a reached function are reached too)."""
        return cast("Iterator[_Node]", self.reach.nodes_in(functions, types))

    def may_be_array(self, node: ast.expr) -> bool:
        """Could the model find `node` to be a JAX array (odelint.analysis.sketch_arrays)?"""
        return self.arrays.may_be_array(node)

    @property
    def reach(self) -> SketchReach:
        if self._reach is None:
            from odelint.analysis.sketch_reach import SketchReach

            self._reach = SketchReach(self)
        return self._reach

    @property
    def arrays(self) -> SketchArrays:
        if self._arrays is None:
            from odelint.analysis.sketch_arrays import SketchArrays

            self._arrays = SketchArrays(self)
        return self._arrays

    @property
    def module_classes(self) -> SketchModuleClasses:
        """Which values may be Equinox modules with a function or string leaf
        (odelint.analysis.sketch_module_classes)."""
        if self._module_classes is None:
            from odelint.analysis.sketch_module_classes import SketchModuleClasses

            self._module_classes = SketchModuleClasses(self)
        return self._module_classes


def _with_leading_parts(names: Iterable[str]) -> frozenset[str]:
    """The dotted names and every leading part of each (`a.b.c`: a, a.b, a.b.c): `x` is in it
    exactly when some name equals `x` or starts with `x + "."`."""
    found: set[str] = set()
    for name in names:
        found.add(name)
        dot = name.find(".")
        while dot != -1:
            found.add(name[:dot])
            dot = name.find(".", dot + 1)
    return frozenset(found)


_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}
_MARKER_FIELDS = frozenset({"ctx", "op", "ops"})


def _child_fields(kind: type) -> tuple[str, ...]:
    """The fields of a node type that may hold nodes, the shared markers left out: `ctx`
    (Load, Store) and operators (`op`, `ops`: Add, Eq, ...), which the analyses read from
    their node. `ast.iter_child_nodes` asks every field of every node, a third of the walk."""
    found = _CHILD_FIELDS[kind] = tuple(field for field in kind._fields  # type: ignore[attr-defined]
                                        if field not in _MARKER_FIELDS)
    return found


def _holds_no_node(kind: type, field: str) -> None:
    """Leave out a field once it has held a name, string or number: the grammar gives each
    field one type, so it never holds a node (`Name.id`, `Constant.value`, `alias.asname`)."""
    _CHILD_FIELDS[kind] = tuple(name for name in _CHILD_FIELDS[kind] if name != field)


def children(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` as a list, without the markers: the Sketch's analyses walk
    every function of a file, and the generic walk costs three times as much."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    found: list[ast.AST] = []
    for field in _child_fields(kind) if fields is None else fields:
        value = getattr(node, field, None)
        if type(value) is list:
            found += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            found.append(value)
    return found


def walk(node: ast.AST) -> list[ast.AST]:
    """`ast.walk` as a list (`node` first), without the markers."""
    found = [node]
    for inner in found:  # grows as it goes: each node's children are appended behind it
        found += children(inner)
    return found
