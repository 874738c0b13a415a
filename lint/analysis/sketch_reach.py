"""Which functions of a sketched file may run traced or differentiated: `Reach` on `ast`.

An over-approximation of odelint.analysis.reach: roots are the functions named in the
arguments of a transform or traced-body call (rules/data/jax_api.toml), or decorated by one;
from a reached function, every function of a name it calls or passes to a call is reached
(whatever scope that name is in), so are the functions nested in it, the functions a name was
assigned from (`step = jax.jit(update)`), and the `__call__` of classes named in the file.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from odelint.analysis import jax_api

if TYPE_CHECKING:
    from odelint.analysis.sketch import FunctionNode, Sketch

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_PROGRESS_METER = "diffrax.AbstractProgressMeter"


class SketchReach:
    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._owns: dict[int, Own] = {}
        self._named: dict[str, list[FunctionNode]] = {}
        self._callables: list[tuple[ast.ClassDef, ast.FunctionDef, set[int]]] | None = None
        self._traced: list[FunctionNode] | None = None
        self._differentiated: list[FunctionNode] | None = None
        self._traced_nodes: set[int] | None = None

    def traced(self) -> list[FunctionNode]:
        if self._traced is None:
            names = {name for name, row in jax_api.transforms().items() if row.traces}
            names |= set(jax_api.traced_bodies())
            self._traced = self._reach(names, [])
        return self._traced

    def differentiated(self) -> list[FunctionNode]:
        if self._differentiated is None:
            names = {name for name, row in jax_api.transforms().items() if row.differentiates}
            extra: list[FunctionNode] = []
            if _PROGRESS_METER in self.sketch.referenced:
                extra = [f for classes in self.sketch.classes.values() for c in classes if c.bases
                         for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            self._differentiated = self._reach(names, extra)
        return self._differentiated

    def in_traced(self, node: ast.AST) -> bool:
        if self._traced_nodes is None:
            self._traced_nodes = {id(inner) for function in self.traced() for inner in self.own(function).nodes}
        return id(node) in self._traced_nodes

    def nodes_in(self, functions: Iterable[FunctionNode], types: tuple[type[ast.AST], ...]) -> Iterator[ast.AST]:
        for function in functions:
            for node in self.own(function).nodes:
                if isinstance(node, types):
                    yield node

    def own(self, function: FunctionNode) -> Own:
        key = id(function)
        if key not in self._owns:
            self._owns[key] = Own(function)
        return self._owns[key]

    def functions_named(self, name: str) -> list[FunctionNode]:
        """Functions a name may stand for: `def`s of that name, and what it was assigned from."""
        found = self._named.get(name)
        if found is None:
            self._named[name] = []  # guards `f = g(f)`
            unique = {id(f): f for f in self.sketch.defs.get(name, ())}
            for value in self.sketch.assigned(name):
                if isinstance(value, (ast.Call, ast.Name, ast.Attribute, ast.Lambda)):
                    unique.update((id(f), f) for f in self._named_functions(value))
            found = self._named[name] = list(unique.values())
        return found

    def _reach(self, transforms: set[str], extra: list[FunctionNode]) -> list[FunctionNode]:
        sketch = self.sketch
        pending: list[FunctionNode] = list(extra)
        for call in sketch.calls:
            if sketch.qualnames(call.func) & transforms:
                for arg in call.args:
                    pending.extend(self._named_functions(arg))
                for keyword in call.keywords:
                    pending.extend(self._named_functions(keyword.value))
        for functions in sketch.defs.values():
            for function in functions:
                if any(self._decorates(decorator, transforms) for decorator in function.decorator_list):  # type: ignore[union-attr]
                    pending.append(function)
        reached: dict[int, FunctionNode] = {}
        expanded: set[str] = set()  # names whose functions are already pending
        while pending:
            function = pending.pop()
            if id(function) in reached:
                continue
            reached[id(function)] = function
            own = self.own(function)
            pending.extend(own.inner)
            for name in own.names - expanded:
                expanded.add(name)
                pending.extend(self.functions_named(name))
            if own.calls:
                pending.extend(self._called_instances(function))
        return list(reached.values())

    def _decorates(self, decorator: ast.expr, transforms: set[str]) -> bool:
        return any(self.sketch.qualnames(node) & transforms for node in ast.walk(decorator)
                   if isinstance(node, (ast.Name, ast.Attribute)))

    def _named_functions(self, node: ast.AST) -> Iterator[FunctionNode]:
        """Functions `node` may stand for or call: lambdas in it, and functions of the names in it."""
        for inner in ast.walk(node):
            if isinstance(inner, FUNCTIONS) and inner is not node:
                yield inner
        for name in self.sketch.names_in(node):
            yield from self.functions_named(name)

    def _called_instances(self, function: FunctionNode) -> Iterator[FunctionNode]:
        """`model(x)` runs `__call__`: of any class named in the file or around `function`."""
        if self._callables is None:
            self._callables = [(cls, method, {id(f) for f in ast.walk(cls) if isinstance(f, FUNCTIONS)})
                               for classes in self.sketch.classes.values() for cls in classes
                               for method in cls.body
                               if isinstance(method, ast.FunctionDef) and method.name == "__call__"]
        for cls, method, inside in self._callables:
            if cls.name in self.sketch.identifiers or id(function) in inside:
                yield method


class Own:
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
            if isinstance(node, FUNCTIONS):
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



