"""A cheap first look at a file with CPython's own parser, to rule rules out before LibCST.

Parsing with `ast` costs about a tenth of a LibCST parse, and most files of a JAX code base
hold nothing any rule could report: no transform ever gets a function of the file, no
Equinox module is in sight. A `Sketch` answers, for the whole file at once and always
erring towards "maybe", the questions the rules' `may_fire` pre-checks ask: which dotted
names the file may refer to (through imports and `x = a.b` aliases, like `Facts.qualname`),
which functions may run traced or differentiated (an over-approximation of `Reach`: a
function named anywhere inside a reached one is reached), and whether an Equinox module may
be in play (equinox or a library of modules referred to, here or in a project file imported).
A pre-check that answers False must mean the rule cannot fire: tests/test_sketch.py checks
that on every rule's examples and fixtures.
"""

from __future__ import annotations

import ast
import functools
import os
from collections.abc import Iterable, Iterator

from odelint.analysis import jax_api

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.comprehension)
# Packages whose own classes are Equinox modules (rules/data/library_modules.toml) or Equinox itself.
_NEVER_PROJECT = frozenset({"jax", "jaxlib", "equinox", "optax", "diffrax", "lineax", "optimistix", "numpy",
                            "scipy", "typing", "collections", "functools", "dataclasses", "abc", "math", "os",
                            "sys", "jaxtyping", "flax", "torch", "haiku"})
_PROGRESS_METER = "diffrax.AbstractProgressMeter"
_BUILTIN_PLAIN = frozenset({"dict", "list", "set", "frozenset", "tuple", "bytearray", "str", "int", "float", "bool",
                            "len", "id", "type", "repr", "hash", "sorted", "range", "object", "getattr"})
# Packages whose calls may return JAX arrays (or things the model cannot see through).
_ARRAY_PACKAGES = frozenset({"jax", "jaxlib", "equinox", "diffrax", "lineax", "optimistix", "optax", "jaxtyping",
                             "functools"})


class Sketch:
    """What a file may hold, from its `ast`: every answer may say yes too often, never too rarely."""

    def __init__(self, tree: ast.Module, path: str | None = None) -> None:
        self.tree = tree
        self.path = path
        self._aliases: dict[str, list[str]] = {}        # name -> the dotted names it may stand for
        self._assigned: dict[str, list[ast.expr]] = {}  # name -> values assigned to it anywhere
        self.defs: dict[str, list[FunctionNode]] = {}   # name -> functions (methods too) of that name
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self.identifiers: set[str] = set()              # every Name and attribute name used
        self.calls: list[ast.Call] = []
        self.subscript_stores: list[ast.Subscript] = []   # `x[i] = ...`, `x[i] += ...` targets
        self.has_loops = False                            # a `for`, `while` or comprehension
        self.imported_modules: list[str] = []           # `import m`, `from m import n`: m and m.n
        self._qualnames: dict[int, frozenset[str]] = {}
        self._identifiers_in: dict[int, frozenset[str]] = {}
        self._nodes: dict[type, list[ast.AST]] = {}
        self._collect()
        self._referenced: frozenset[str] | None = None
        self._traced: set[int] | None = None
        self._differentiated: set[int] | None = None
        self._functions: dict[int, FunctionNode] = {}
        self._parents: dict[int, ast.AST] | None = None
        self._owns: dict[int, _Own] = {}
        self._named: dict[str, list[FunctionNode]] = {}
        self._array_bindings: _ArrayBindings | None = None
        self._traced_nodes: set[int] | None = None
        self._callables: list[tuple[ast.ClassDef, ast.FunctionDef, set[int]]] | None = None

    # -- names ----------------------------------------------------------------------------

    def _collect(self) -> None:
        nodes = self._nodes
        for node in ast.walk(self.tree):  # one pass, each node filed under its type
            kind = type(node)
            if kind in nodes:
                nodes[kind].append(node)
            else:
                nodes[kind] = [node]
        for name in self.of_type(ast.Name):
            self.identifiers.add(name.id)  # type: ignore[attr-defined]
        for attribute in self.of_type(ast.Attribute):
            self.identifiers.add(attribute.attr)  # type: ignore[attr-defined]
        self.calls = self.of_type(ast.Call)  # type: ignore[assignment]
        self.subscript_stores = [node for node in self.of_type(ast.Subscript)
                                 if isinstance(node.ctx, ast.Store)]  # type: ignore[attr-defined]
        self.has_loops = any(kind in nodes for kind in _LOOPS)
        for function in self.of_type(ast.FunctionDef, ast.AsyncFunctionDef):
            self.defs.setdefault(function.name, []).append(function)  # type: ignore[attr-defined]
        for cls in self.of_type(ast.ClassDef):
            self.classes.setdefault(cls.name, []).append(cls)  # type: ignore[attr-defined]
        for node in self.of_type(ast.Import):
            for alias in node.names:  # type: ignore[attr-defined]
                self.imported_modules.append(alias.name)
                if alias.asname:
                    self._aliases.setdefault(alias.asname, []).append(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    self._aliases.setdefault(top, []).append(top)
        for node in self.of_type(ast.ImportFrom):
            module = "." * node.level + (node.module or "")  # type: ignore[attr-defined]
            self.imported_modules.append(module)
            for alias in node.names:  # type: ignore[attr-defined]
                full = f"{module}.{alias.name}" if module and not module.endswith(".") else module + alias.name
                self.imported_modules.append(full)
                self._aliases.setdefault(alias.asname or alias.name, []).append(full)
        for node in self.of_type(ast.Assign, ast.AnnAssign, ast.NamedExpr):
            if node.value is None:  # type: ignore[attr-defined]
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        self._assigned.setdefault(name.id, []).append(node.value)  # type: ignore[attr-defined]

    def of_type(self, *types: type[ast.AST]) -> list[ast.AST]:
        """Every node of these exact types in the file, in no particular order."""
        if len(types) == 1:
            return self._nodes.get(types[0], [])
        return [node for kind in types for node in self._nodes.get(kind, ())]

    def assigned(self, name: str) -> list[ast.expr]:
        """The values assigned to `name` anywhere in the file (`x = ...`, tuple targets included)."""
        return self._assigned.get(name, [])

    def qualnames(self, node: ast.expr) -> frozenset[str]:
        """The dotted names `node` may refer to (`jnp.where` -> jax.numpy.where)."""
        key = id(node)
        if key not in self._qualnames:
            self._qualnames[key] = frozenset()  # guards `a = b; b = a`
            self._qualnames[key] = frozenset(self._compute_qualnames(node))
        return self._qualnames[key]

    def _compute_qualnames(self, node: ast.expr) -> Iterator[str]:
        if isinstance(node, ast.Attribute):
            for base in self.qualnames(node.value):
                yield f"{base}.{node.attr}"
        elif isinstance(node, ast.Name):
            yield from self._aliases.get(node.id, ())
            for value in self._assigned.get(node.id, ()):
                if isinstance(value, (ast.Name, ast.Attribute)):
                    yield from self.qualnames(value)

    @property
    def referenced(self) -> frozenset[str]:
        """Every dotted name the file may refer to, through imports and aliases."""
        if self._referenced is None:
            known = self._aliases.keys() | self._assigned.keys()
            found: set[str] = set()
            for node in self.of_type(ast.Name, ast.Attribute):
                root = node
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(root, ast.Name) and root.id in known:
                    found.update(self.qualnames(node))
            self._referenced = frozenset(found)
        return self._referenced

    def refers_to(self, *names: str) -> bool:
        """Does the file refer to one of these dotted names, or to something inside one?"""
        return any(found == name or found.startswith(name + ".") for found in self.referenced for name in names)

    def calls_to(self, names: Iterable[str]) -> list[ast.Call]:
        """Calls whose function may be one of these dotted names."""
        wanted = frozenset(names)
        return [call for call in self.calls if self.qualnames(call.func) & wanted]

    def names_in(self, node: ast.AST) -> frozenset[str]:
        """Every Name and attribute name inside `node` (itself included)."""
        key = id(node)
        if key not in self._identifiers_in:
            found = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    found.add(inner.id)
                elif isinstance(inner, ast.Attribute):
                    found.add(inner.attr)
            self._identifiers_in[key] = frozenset(found)
        return self._identifiers_in[key]

    def imports(self, name: str) -> bool:
        """Does an import statement name `name`, or something inside it?"""
        return any(found == name or found.startswith(name + ".") for found in self.imported_modules)

    def may_be_array(self, node: ast.expr) -> bool:
        """Could the model find `node` to be a JAX array (`Kind.ARRAY`)? Only a name assigned
        something that may be one, an annotated name, a parameter of a function this file calls
        by name, an item of such a value, or an attribute assigned or annotated so."""
        if isinstance(node, ast.Subscript):
            return self.may_be_array(node.value)
        if isinstance(node, ast.Attribute):
            return (node.attr in ("T", "mT", "real", "imag") or node.attr in self._arrays().annotated
                    or any(not self._plainly_not_array(value) for value in self._arrays().fields.get(node.attr, ())))
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            return any(self.may_be_array(side) for side in ast.iter_child_nodes(node) if isinstance(side, ast.expr))
        if isinstance(node, (ast.Call, ast.Constant, ast.JoinedStr, ast.Tuple, ast.Dict, ast.Set, ast.DictComp,
                             ast.ListComp, ast.SetComp, ast.Lambda)):
            return not self._plainly_not_array(node)
        if not isinstance(node, ast.Name):
            return True
        arrays = self._arrays()
        return (node.id in arrays.annotated or node.id in arrays.parameters
                or any(not self._plainly_not_array(value) for value in self.assigned(node.id)))

    def may_declare_array(self, annotation: ast.expr) -> bool:
        """Could this annotation declare a JAX array: a string, or a name from the JAX stack?"""
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and any(
                    name.split(".")[0] in _ARRAY_PACKAGES for name in self.qualnames(node)):
                return True
        return False

    def _arrays(self) -> _ArrayBindings:
        if self._array_bindings is None:
            self._array_bindings = _ArrayBindings(self)
        return self._array_bindings

    def _plainly_not_array(self, value: ast.expr) -> bool:
        if isinstance(value, (ast.Tuple, ast.List)):  # `a, b = jnp.zeros(3), 0` unpacks
            return all(self._plainly_not_array(element) for element in value.elts)
        if isinstance(value, (ast.Dict, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp, ast.Constant,
                              ast.JoinedStr, ast.Lambda)):
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and func.id in _BUILTIN_PLAIN and func.id not in self._aliases \
                and func.id not in self._assigned and func.id not in self.defs and func.id not in self.classes:
            return True
        names = self.qualnames(func)
        return bool(names) and not any(name.split(".")[0] in _ARRAY_PACKAGES for name in names)

    # -- where a node is -------------------------------------------------------------------

    def parent(self, node: ast.AST) -> ast.AST | None:
        if self._parents is None:
            self._parents = {}
            for outer in ast.walk(self.tree):
                for inner in ast.iter_child_nodes(outer):
                    self._parents[id(inner)] = outer
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
        return current  # type: ignore[return-value]

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
        return any(any(function in self._functions_named(name) for name in self.names_in(call.func))
                   and self.in_loop(call) for call in self.calls)

    def in_traced(self, node: ast.AST) -> bool:
        """Is `node` in the code of a function that may run traced?"""
        if self._traced_nodes is None:
            self._traced_nodes = {id(inner) for function in self.traced_functions()
                                  for inner in self._own(function).nodes}
        return id(node) in self._traced_nodes

    # -- Equinox modules --------------------------------------------------------------------

    def may_hold_modules(self) -> bool:
        """Can a value of this file be an Equinox module? Only if the file refers to Equinox or
        to a library of modules (diffrax, lineax, ...), or imports a project file that may."""
        if self.refers_to("equinox", *_module_libraries()):
            return True
        if self.path is None:
            return False
        return any(_project_may_hold_modules(found, frozenset({os.path.abspath(self.path)}))
                   for found in self._project_files())

    def _project_files(self) -> Iterator[str]:
        from odelint.analysis import project

        for module in self.imported_modules:
            if module.lstrip(".").split(".")[0] in _NEVER_PROJECT:
                continue
            found = project.module_file(module, self.path)  # type: ignore[arg-type]
            if found is not None:
                yield found

    # -- traced and differentiated code ---------------------------------------------------

    def traced_functions(self) -> list[FunctionNode]:
        """Functions that may run on tracers: handed to or decorated by a tracing transform or
        given to `lax.scan`/a diffrax term, and whatever those name."""
        if self._traced is None:
            names = {name for name, row in jax_api.transforms().items() if row.traces}
            names |= set(jax_api.traced_bodies())
            self._traced = self._reach(names, ())
        return [self._functions[key] for key in self._traced]

    def differentiated_functions(self) -> list[FunctionNode]:
        """Functions that may run under differentiation (and the methods of a diffrax progress meter)."""
        if self._differentiated is None:
            names = {name for name, row in jax_api.transforms().items() if row.differentiates}
            extra: list[FunctionNode] = []
            if _PROGRESS_METER in self.referenced:
                extra = [f for classes in self.classes.values() for c in classes if c.bases
                         for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            self._differentiated = self._reach(names, extra)
        return [self._functions[key] for key in self._differentiated]

    def nodes_in(self, functions: Iterable[FunctionNode], *types: type[ast.AST]) -> Iterator[ast.AST]:
        """Nodes of these types inside the functions (each function's own code; the functions
        nested in a reached function are reached too)."""
        for function in functions:
            for node in self._own(function).nodes:
                if isinstance(node, types):
                    yield node

    def _own(self, function: FunctionNode) -> _Own:
        key = id(function)
        if key not in self._owns:
            self._owns[key] = _Own(function)
        return self._owns[key]

    def _reach(self, transforms: set[str], extra: list[FunctionNode]) -> set[int]:
        pending: list[FunctionNode] = list(extra)
        for call in self.calls:
            if self.qualnames(call.func) & transforms:
                for arg in call.args:
                    pending.extend(self._named_functions(arg))
                for keyword in call.keywords:
                    pending.extend(self._named_functions(keyword.value))
        for functions in self.defs.values():
            for function in functions:
                if any(self._decorates(decorator, transforms) for decorator in function.decorator_list):  # type: ignore[union-attr]
                    pending.append(function)
        reached: set[int] = set()
        expanded: set[str] = set()  # names whose functions are already pending
        while pending:
            function = pending.pop()
            if id(function) in reached:
                continue
            reached.add(id(function))
            self._functions[id(function)] = function
            own = self._own(function)
            pending.extend(own.inner)
            for name in own.names - expanded:
                expanded.add(name)
                pending.extend(self._functions_named(name))
            if own.calls:
                pending.extend(self._called_instances(function))
        return reached

    def _decorates(self, decorator: ast.expr, transforms: set[str]) -> bool:
        return any(self.qualnames(node) & transforms for node in ast.walk(decorator)
                   if isinstance(node, (ast.Name, ast.Attribute)))

    def _named_functions(self, node: ast.AST) -> Iterator[FunctionNode]:
        """Functions `node` may stand for or call: lambdas in it, functions of any name used
        in it, and what those names were assigned (`step = jax.jit(update)`)."""
        for inner in ast.walk(node):
            if isinstance(inner, _FUNCTIONS) and inner is not node:
                yield inner
        for name in self.names_in(node):
            yield from self._functions_named(name)

    def _functions_named(self, name: str) -> list[FunctionNode]:
        found = self._named.get(name)
        if found is None:
            self._named[name] = []  # guards `f = g(f)`
            unique = {id(f): f for f in self.defs.get(name, ())}
            for value in self._assigned.get(name, ()):
                if isinstance(value, (ast.Call, ast.Name, ast.Attribute, ast.Lambda)):
                    unique.update((id(f), f) for f in self._named_functions(value))
            found = self._named[name] = list(unique.values())
        return found

    def _called_instances(self, function: FunctionNode) -> Iterator[FunctionNode]:
        """`model(x)` runs `__call__`: of any class named in the file or around `function`."""
        if self._callables is None:
            self._callables = [(cls, method, {id(f) for f in ast.walk(cls) if isinstance(f, _FUNCTIONS)})
                               for classes in self.classes.values() for cls in classes
                               for method in cls.body
                               if isinstance(method, ast.FunctionDef) and method.name == "__call__"]
        for cls, method, inside in self._callables:
            if cls.name in self.identifiers or id(function) in inside:
                yield method


class _ArrayBindings:
    """Where the model may find an array kind: annotated names (parameters and fields too),
    parameters of functions the file calls by name (`Facts` reads their call sites), and the
    values assigned to each attribute name (`self.x = ...`)."""

    def __init__(self, sketch: Sketch) -> None:
        self.annotated = {node.target.id for node in sketch.of_type(ast.AnnAssign)  # type: ignore[attr-defined]
                          if isinstance(node.target, ast.Name) and sketch.may_declare_array(node.annotation)}  # type: ignore[attr-defined]
        methods = {id(f) for classes in sketch.classes.values() for cls in classes for f in cls.body}
        self.parameters: set[str] = set()
        for functions in sketch.defs.values():
            for function in functions:
                arguments = function.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                         *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
                self.annotated.update(a.arg for a in every
                                      if a.annotation is not None and sketch.may_declare_array(a.annotation))
                if id(function) not in methods and function.name in sketch.identifiers:  # type: ignore[union-attr]
                    self.parameters.update(a.arg for a in every)
        self.fields: dict[str, list[ast.expr]] = {}
        for node in sketch.of_type(ast.Assign, ast.AnnAssign, ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
            for target in targets:
                for inner in _bound(target):
                    if isinstance(inner, ast.Attribute):
                        value = node.value if node.value is not None else ast.Name("?")  # type: ignore[attr-defined]
                        if isinstance(node, ast.AugAssign) or not isinstance(target, ast.Attribute):
                            value = ast.Name("?")  # not a plain assignment: may be anything
                        self.fields.setdefault(inner.attr, []).append(value)
                        if isinstance(node, ast.AnnAssign) and sketch.may_declare_array(node.annotation):  # type: ignore[attr-defined]
                            self.annotated.add(inner.attr)


def _bound(target: ast.expr) -> Iterator[ast.expr]:
    """What an assignment target binds: names and attributes, through tuples and `*rest`
    (an item assignment `x[i] = ...` binds nothing)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound(element)
    elif isinstance(target, ast.Starred):
        yield from _bound(target.value)
    elif isinstance(target, (ast.Name, ast.Attribute)):
        yield target


class _Own:
    """A function's own code: its nodes (not those of functions nested in it), the names it
    calls or passes to calls, the functions nested directly in it, and whether it calls anything."""

    __slots__ = ("calls", "inner", "names", "nodes")

    def __init__(self, function: FunctionNode) -> None:
        self.nodes: list[ast.AST] = []
        self.inner: list[FunctionNode] = []
        names: set[str] = set()
        calls = False
        stack = list(ast.iter_child_nodes(function))
        while stack:
            node = stack.pop()
            if isinstance(node, _FUNCTIONS):
                self.inner.append(node)
                continue
            self.nodes.append(node)
            if isinstance(node, ast.Call):  # what `Reach` follows: the callee, and functions passed on
                calls = True
                for inner in ast.walk(node.func):
                    if isinstance(inner, ast.Name):
                        names.add(inner.id)
                    elif isinstance(inner, ast.Attribute):
                        names.add(inner.attr)
                for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
                    value = arg.value if isinstance(arg, ast.Starred) else arg
                    if isinstance(value, ast.Name):
                        names.add(value.id)
                    elif isinstance(value, ast.Attribute):
                        names.add(value.attr)
            stack.extend(ast.iter_child_nodes(node))
        self.names = names
        self.calls = calls


@functools.cache
def _module_libraries() -> tuple[str, ...]:
    """Top-level packages that define Equinox modules (rules/data/library_modules.toml)."""
    return tuple(sorted({prefix.split(".")[0] for prefix in jax_api.library_prefixes()}))


_project_answers: dict[str, tuple[list[int] | None, bool]] = {}


def _project_may_hold_modules(path: str, seen: frozenset[str]) -> bool:
    """Does a project file refer to Equinox or a library of modules, itself or through its imports?"""
    from odelint.analysis import project

    path = os.path.abspath(path)
    if path in seen:
        return False
    stamp = project.stamp(path)
    cached = _project_answers.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # unreadable here, so the model cannot read it either; stay on the safe side
    sketch = Sketch(tree, path)
    answer = sketch.refers_to("equinox", *_module_libraries()) or any(
        _project_may_hold_modules(found, seen | {path}) for found in sketch._project_files())
    _project_answers[path] = (stamp, answer)
    return answer
