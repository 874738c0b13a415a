"""Which functions of a sketched file may run traced or differentiated, and which names there
may hold traced values: `Reach` and `Tracing` on `ast`.

An over-approximation of odelint.analysis.reach: roots are the functions a transform or a
traced-body call may be given where the model looks (a transform's first argument or `fun=`,
`lax.scan`'s `f`, `lax.switch`'s branches, per lint/analysis/data/jax_api.toml), or that a transform
decorates (`@T`, `@T(...)`, `@partial(T, ...)`). From a reached function, every function it
calls or passes to a call (but to a host callback) is reached as `Reach.function` finds one:
a name's `def`s that a lookup from there may find, what a function wrapper assigned to the
name wraps (`step = jax.jit(update)`), and what the calls of a function pass for a parameter;
an attribute's methods (`obj.f`: a `def f` in a class body, never a plain function); the
functions nested in it; and the `__call__` of classes named in the file.

Traced values (odelint.analysis.tracing) derive from parameters: those a root's transform
traces, and those of functions that traced code calls by name and gives a value that may be
traced (every parameter where the call's arguments do not map plainly onto the function's),
and flow through assignments.
`traced_bindings` holds each (scope, name) that may hold one; a name used in a scope may be
traced when one of the scopes its lookup passes through holds a traced binding of it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, cast

from odelint.analysis import jax_api
from odelint.analysis.jax_api import function_wrappers
from odelint.analysis.sketch import children, walk
from odelint.analysis.sketch_calls import PARTIAL, keyword, parameters, positional_names, static_options

if TYPE_CHECKING:
    from odelint.analysis.sketch import FunctionNode, Sketch

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_SCOPES = (*FUNCTIONS, ast.ClassDef, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_PROGRESS_METER = "diffrax.AbstractProgressMeter"


@dataclasses.dataclass(frozen=True)
class Way:
    """One way a root is given: how many leading parameters are already bound, the positions
    traced after them (None: all), and what the transform's options mark static (`static_argnames`
    by name, `static_argnums` by position after the bound ones, a negative one from the end)."""

    bound: int
    params: tuple[int, ...] | None = None
    static_names: frozenset[str] = frozenset()
    static_numbers: frozenset[int] = frozenset()
    filtered: bool = False  # only by Equinox's filter_* transforms: they trace arrays and keys only


@dataclasses.dataclass
class Root:
    """A function a transform or traced-body call may trace, and the ways it is given."""

    function: FunctionNode
    ways: set[Way]


class SketchReach:
    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._owns: dict[int, Own] = {}
        self._named: dict[str, list[FunctionNode]] = {}
        self._edges: dict[str, tuple[list[FunctionNode], set[str]]] = {}
        self._vias: dict[str, list[FunctionNode]] = {}
        self._callables: list[tuple[ast.ClassDef, ast.FunctionDef, set[int]]] | None = None
        self._roots: dict[int, Root] | None = None
        self._traced: list[FunctionNode] | None = None
        self._differentiated: list[FunctionNode] | None = None
        self._traced_nodes: set[int] | None = None
        self._traced_bindings: set[tuple[int, str]] | None = None
        self._chains: dict[int, list[int]] = {}
        self._globals: dict[int, set[str]] = {}  # scope -> the names it declares `global`
        self._bound: dict[int, frozenset[str]] = {}  # scope -> the names it binds itself (not `global`)
        self._dynamic: dict[int, frozenset[str]] = {}
        self._passed_to: dict[str, list[ast.expr]] | None = None  # parameter name -> arguments of calls
        self._bindings: dict[int, tuple[dict[str, list[_Binding]], set[str]]] = {}  # scope -> `_scope_bindings`
        self._walrus: frozenset[str] | None = None
        self._callers: dict[int, list[ast.Call]] | None = None

    # -- which functions ----------------------------------------------------------------------

    def traced(self) -> list[FunctionNode]:
        if self._traced is None:
            self._traced = self._reach([root.function for root in self.traced_roots().values()])
        return self._traced

    def traced_roots(self) -> dict[int, Root]:
        """Functions that tracing transforms or traced-body calls may be given, or decorated by
        one (`Tracing._find_call_roots`, `_find_decorator_roots`)."""
        if self._roots is None:
            self._roots = {}
            tracing = tracing_transforms()
            bodies = jax_api.traced_bodies()
            for call in self.sketch.calls_to(tracing | bodies.keys()):
                names = self.sketch.qualnames(call.func)
                if names & tracing:
                    static = static_options_of(call, names & tracing)
                    for target in given_at(call, ("fun", "f"), 0):
                        self._add_roots(target, None, static, _filtering(names & tracing))
                for name in names & bodies.keys():
                    for target in _body_targets(call, bodies[name]):
                        self._add_roots(target, bodies[name].params)
            methods = {id(f) for classes in self.sketch.classes.values() for cls in classes for f in cls.body}
            for function in self.decorated(tracing):
                bound = int(id(function) in methods)  # a method's `self`
                root = self._roots.setdefault(id(function), Root(function, set()))
                assert not isinstance(function, ast.Lambda)
                filtered = _filtering(frozenset().union(*(self._decorator_transforms(decorator, tracing)
                                                          for decorator in function.decorator_list)))
                root.ways.update(Way(bound, None, *static, filtered)
                                 for static in self.decorator_options(function, tracing))
        return self._roots

    def surely_traced(self, scope: ast.AST) -> bool:
        """Is the code of this scope traced, whatever else the model finds (`Tracing.why`, from
        below)? It is, or is nested in, a function decorated by a transform that traces under
        every meaning of its name (`@jax.vmap`), or a lambda handed straight to one
        (`jax.vmap(lambda key: ...)`)."""
        current: ast.AST | None = scope
        while current is not None:
            if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    self._surely_tracing(decorator) for decorator in current.decorator_list):
                return True
            parent = self.sketch.parent(current)
            if (isinstance(current, ast.Lambda) and isinstance(parent, ast.Call) and parent.args
                    and parent.args[0] is current and not keyword(parent, "fun", "f")
                    and self._surely_tracing(parent.func)):
                return True
            current = scope_of(self.sketch, current)
        return False

    def _surely_tracing(self, node: ast.expr) -> bool:
        meanings = self.sketch.qualnames(node) if isinstance(node, (ast.Name, ast.Attribute)) else frozenset()
        return bool(meanings) and meanings <= tracing_transforms()

    def _add_roots(self, target: ast.expr, params: tuple[int, ...] | None,
                   static: tuple[frozenset[str], frozenset[int]] = (frozenset(), frozenset()),
                   filtered: bool = False) -> None:
        assert self._roots is not None
        for function, offset in self.function_targets(target):
            self._roots.setdefault(id(function), Root(function, set())).ways.add(
                Way(offset, params, *static, filtered))

    def decorator_options(self, function: FunctionNode,
                           transforms: AbstractSet[str]) -> Iterator[tuple[frozenset[str], frozenset[int]]]:
        """What each tracing decorator of `function` marks static: read from the decorator's own
        call (`@partial(jax.jit, static_argnames="n")`, `@jax.jit(static_argnums=1)`) or the call
        a name of it was assigned (`jit_static = partial(...)`), nothing where it cannot tell."""
        assert not isinstance(function, ast.Lambda)
        for decorator in function.decorator_list:
            if not self._decorates(decorator, transforms):
                continue
            given = [value for value in self.sketch.assigned(decorator.id) if isinstance(value, ast.Call)] if (
                isinstance(decorator, ast.Name)) else [decorator]
            if not given or (isinstance(decorator, ast.Name) and self.sketch.qualnames(decorator) & transforms):
                yield frozenset(), frozenset()
            for value in given:
                if not isinstance(value, ast.Call):
                    yield frozenset(), frozenset()
                    continue
                meanings = self.sketch.qualnames(value.func) & transforms
                if not meanings and PARTIAL in self.sketch.qualnames(value.func) and value.args:
                    meanings = self.sketch.qualnames(value.args[0]) & transforms
                yield static_options_of(value, meanings)

    def differentiated(self) -> list[FunctionNode]:
        if self._differentiated is None:
            names = {name for name, row in jax_api.transforms().items() if row.differentiates}
            roots: list[FunctionNode] = []
            if self.sketch.mentions(_PROGRESS_METER):
                roots = [f for classes in self.sketch.classes.values() for c in classes if c.bases
                         for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
            for call in self.sketch.calls_to(names):  # `Differentiation._find_transform_roots`: the first positional
                if call.args and not isinstance(call.args[0], ast.Starred):
                    roots.extend(function for function, _ in self.function_targets(call.args[0]))
            roots.extend(self.decorated(names))
            self._differentiated = self._reach(roots)
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
            self._owns[key] = Own(function, self._runs_elsewhere)
        return self._owns[key]

    def _runs_elsewhere(self, call: ast.Call) -> bool:
        """Does the call run the functions it is given elsewhere, on the host, with concrete
        values (`io_callback(f, ...)`: `Reach` is never into a host callback's functions)?"""
        meanings = self.sketch.qualnames(call.func)
        return bool(meanings) and all(name in jax_api.callbacks() for name in meanings)

    def functions_named(self, name: str) -> list[FunctionNode]:
        """Functions a name may stand for, wherever it is used: `def`s of that name, and what it
        is assigned or, as a parameter, passed (`_assignment_edges`: `step = jax.jit(update)`),
        closed over chains and cycles of assignments (`a = jax.jit(b); b = jax.vmap(a)`)."""
        found = self._named.get(name)
        if found is None:
            self._close(name)
            found = self._named[name]
        return found

    def functions_at(self, name: str, scope: ast.AST | None) -> list[FunctionNode]:
        """The functions `name`, used in `scope`, may stand for: `functions_named`, less the
        `def`s of that name that a lookup from `scope` cannot find (`ScopeIndex.lookup` looks in
        the scope and those around it, class bodies aside): another test's `def reference_impl`,
        a method named by a bare name outside its class body. What the name's assigned values
        and arguments stand for stays, wherever it is defined."""
        found = [function for function in self.sketch.defs.get(name, ()) if self._sees(scope, function)]
        return found + [function for function in self._via(name) if function not in found]

    def _sees(self, scope: ast.AST | None, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Can a lookup from `scope` (or, for a function, from a class body nested in its own
        code) find the `def`? Its scope must be one the lookup searches."""
        home = scope_of(self.sketch, function)
        around = home
        while isinstance(around, ast.ClassDef) and isinstance(scope, FUNCTIONS):
            around = scope_of(self.sketch, around)
        if around is scope and scope is not None:  # in `scope`, or a class body of the function's own code
            return True
        return (0 if home is None else id(home)) in self._chain(scope)

    def _via(self, name: str) -> list[FunctionNode]:
        """What `name` stands for through its assigned values and arguments (`functions_named`
        but its own `def`s, unless a chain of assignments leads back to it)."""
        found = self._vias.get(name)
        if found is None:
            functions, names = self._assignment_edges(name)
            unique = {id(function): function for function in functions}
            for other in names:
                unique.update((id(function), function) for function in self.functions_named(other))
            found = self._vias[name] = list(unique.values())
        return found

    def _close(self, start: str) -> None:
        """`functions_named` for every name `start` reaches through assignments, found together:
        Tarjan's strongly connected components of those edges, each closed once its successors
        are (names in one cycle share their functions). Closing one name at a time walked the
        same chains again for each name a traced function uses."""
        order: dict[str, int] = {}
        low: dict[str, int] = {}
        stack: list[str] = []
        on_stack: set[str] = set()
        work: list[tuple[str, Iterator[str]]] = []

        def enter(name: str) -> None:
            order[name] = low[name] = len(order)
            stack.append(name)
            on_stack.add(name)
            work.append((name, iter(self._assignment_edges(name)[1])))

        enter(start)
        while work:
            name, successors = work[-1]
            for other in successors:
                if other in self._named:  # closed before: nothing of it is on the stack
                    continue
                if other not in order:
                    enter(other)
                    break
                if other in on_stack:
                    low[name] = min(low[name], order[other])
            else:
                work.pop()
                if work:
                    caller = work[-1][0]
                    low[caller] = min(low[caller], low[name])
                if low[name] == order[name]:
                    self._close_component(name, stack, on_stack)

    def _close_component(self, root: str, stack: list[str], on_stack: set[str]) -> None:
        component: list[str] = []
        while not component or component[-1] != root:
            component.append(stack.pop())
            on_stack.discard(component[-1])
        unique: dict[int, FunctionNode] = {}
        members = set(component)
        for name in component:
            functions, names = self._assignment_edges(name)
            unique.update((id(function), function) for function in self.sketch.defs.get(name, ()))
            unique.update((id(function), function) for function in functions)
            for other in names - members:  # closed already: a successor's component comes first
                unique.update((id(function), function) for function in self._named[other])
        found = list(unique.values())
        for name in component:
            self._named[name] = found

    def _assignment_edges(self, name: str) -> tuple[list[FunctionNode], set[str]]:
        """The functions a name's assigned values (and, for a parameter, the arguments passed)
        stand for directly, and the names they use; not the name's own `def`s."""
        edges = self._edges.get(name)
        if edges is None:
            edges = self._edges[name] = self._compute_edges(name)
        return edges

    def _compute_edges(self, name: str) -> tuple[list[FunctionNode], set[str]]:
        functions: list[FunctionNode] = []
        names: set[str] = set()
        # `Facts.callee`: what a function wrapper was given (not `partial`: `g = partial(f, a)`
        # stands for no function); for a parameter, what the calls of its function pass
        # (`Reach._passed_function`), read as `Reach.function` reads an argument (`partial` too)
        values = [*(self._unwrapped(value, function_wrappers()) for value in self.sketch.bound(name)),
                  *(self._unwrapped(value, _wrappers_and_partial()) for value in self._arguments_for(name))]
        for value in values:
            if isinstance(value, ast.Name):
                names.add(value.id)
            elif isinstance(value, ast.Lambda):
                functions.append(value)
            elif isinstance(value, ast.Attribute):
                functions.extend(self.methods_named(value.attr))
        return functions, names

    def _unwrapped(self, value: ast.expr, through: frozenset[str]) -> ast.expr:
        """What `jax.jit(jax.vmap(f))` wraps (`f`), through calls of these; any other call
        returns no function of the file the model follows (`step = make_step(f)`: `Facts.callee`
        finds none), nor does it find one in a tuple unpacked or an item stored."""
        while isinstance(value, ast.Call) and value.args and self.sketch.qualnames(value.func) & through:
            first = value.args[0]
            value = first.value if isinstance(first, ast.Starred) else first
        return value

    def _arguments_for(self, name: str) -> list[ast.expr]:
        """Every argument of the calls of functions that have a parameter called `name`: calls
        `Facts.calls_of` may find (`SketchArrays.callees_of`: `f(...)`, `jax.jit(f)(...)`; not
        `obj.f(...)`, whose callee the model never takes for a `def` of the file)."""
        if self._passed_to is None:
            self._passed_to = {}
            for call in self.sketch.calls:
                functions = self.sketch.arrays.callees_of(call.func)
                given = [*call.args, *(keyword.value for keyword in call.keywords)] if functions else []
                for function in functions:
                    for param in (*function.args.posonlyargs, *function.args.args):
                        self._passed_to.setdefault(param.arg, []).extend(given)
        return self._passed_to.get(name, [])

    def function_targets(self, node: ast.expr, offset: int = 0) -> Iterator[tuple[FunctionNode, int]]:
        """The functions a value handed to a transform may be, with how many leading parameters
        are bound (`Reach.function`): a lambda, a name's functions, a method `obj.f` (self
        bound), and what `jax.jit(f)` or `partial(f, a)` wraps (`a` bound too)."""
        if isinstance(node, ast.Lambda):
            yield node, offset
        elif isinstance(node, ast.Name):
            for function in self.functions_at(node.id, scope_of(self.sketch, node)):
                yield function, offset
        elif isinstance(node, ast.Attribute):
            for function in self.methods_named(node.attr):
                yield function, offset + 1
        elif isinstance(node, ast.Call) and node.args and not isinstance(node.args[0], ast.Starred):
            yield from self.function_targets(node.args[0], offset)
            if PARTIAL in self.sketch.qualnames(node.func):
                yield from self.function_targets(node.args[0], offset + _positional_before_star(node) - 1)

    def methods_named(self, name: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The `def`s of this name in a class body: all `obj.name` may stand for (`Reach.function`
        finds a method of the instance's class, or of its bases, and nothing else: not a plain
        function, nor one assigned to the attribute)."""
        return [function for function in self.sketch.defs.get(name, ())
                if isinstance(scope_of(self.sketch, function), ast.ClassDef)]

    def calls_of(self, function: FunctionNode) -> list[ast.Call]:
        """The calls that may run `function` (`function_targets` of each call's function: a
        name standing for it, `jax.jit(f)(...)`, a method): those `Facts.callee` finds, and more."""
        if self._callers is None:
            self._callers = {}
            for call in self.sketch.calls:
                for target, _ in self.function_targets(call.func):
                    self._callers.setdefault(id(target), []).append(call)
        return self._callers.get(id(function), [])

    def _reach(self, roots: list[FunctionNode]) -> list[FunctionNode]:
        pending = list(roots)
        reached: dict[int, FunctionNode] = {}
        expanded: set[tuple[str, int]] = set()  # (name, function using it) already followed
        methods: set[str] = set()   # attribute names whose methods are
        while pending:
            function = pending.pop()
            if id(function) in reached:
                continue
            reached[id(function)] = function
            own = self.own(function)
            pending.extend(own.inner)
            for name in own.names:
                if (name, id(function)) not in expanded:
                    expanded.add((name, id(function)))
                    pending.extend(self.functions_at(name, function))
            for attribute in own.attributes - methods:
                methods.add(attribute)
                pending.extend(self.methods_named(attribute))
            if own.calls:
                pending.extend(self._called_instances(function))
        return list(reached.values())

    def transforms_own_function(self, transforms: frozenset[str]) -> bool:
        """Is one of these transforms applied to a function of the file: `T(f, ...)` with `f` a
        lambda, a def, a method, or one wrapped by `partial` or another transform, or `@T` on a
        def (what `transformed.applied` and `decorations` find through `Reach.function`)?"""
        for call in self.sketch.calls_to(transforms):
            if any(next(self.function_targets(target), None) is not None for target in given_at(call, ("fun", "f"), 0)):
                return True
        return next(self.decorated(transforms), None) is not None

    def decorated(self, transforms: AbstractSet[str]) -> Iterator[FunctionNode]:
        for functions in self.sketch.defs.values():
            for function in functions:
                if any(self._decorates(decorator, transforms) for decorator in function.decorator_list):
                    yield function

    def _decorates(self, decorator: ast.expr, transforms: AbstractSet[str]) -> bool:
        """A decorator naming one of the transforms, also through a name bound to a call
        (`jit_static = partial(jax.jit, static_argnums=1)`, as `Facts.decorator_value` reads it)."""
        return bool(self._decorator_transforms(decorator, transforms))

    def _decorator_transforms(self, decorator: ast.expr, transforms: AbstractSet[str]) -> frozenset[str]:
        """The transforms among these that the decorator may apply, as `decorations` and
        `Tracing._decorator_transform` read it: `@T`, `@T(...)`, `@functools.partial(T, ...)`,
        or a name bound to such a call (`Facts.decorator_value`). A transform named anywhere
        else in it applies nothing: `@parameterized.parameters(jax.jit, jax.pmap)`."""
        values = [decorator]
        if isinstance(decorator, ast.Name):
            values += [value for value in self.sketch.assigned(decorator.id) if isinstance(value, ast.Call)]
        found: set[str] = set()
        for value in values:
            meanings = self.sketch.qualnames(value.func if isinstance(value, ast.Call) else value)
            found |= meanings & transforms
            if isinstance(value, ast.Call) and PARTIAL in meanings and value.args and not isinstance(
                    value.args[0], ast.Starred):
                found |= self.sketch.qualnames(value.args[0]) & transforms
        return frozenset(found)

    def _called_instances(self, function: FunctionNode) -> Iterator[FunctionNode]:
        """`model(x)` runs `__call__`: of any class named in the file or around `function`."""
        if self._callables is None:
            self._callables = [(cls, method, {id(f) for f in walk(cls) if isinstance(f, FUNCTIONS)})
                               for classes in self.sketch.classes.values() for cls in classes
                               for method in cls.body
                               if isinstance(method, ast.FunctionDef) and method.name == "__call__"]
        for cls, method, inside in self._callables:
            if cls.name in self.sketch.identifiers or id(function) in inside:
                yield method

    # -- which names hold traced values ----------------------------------------------------------

    def may_be_traced(self, node: ast.AST) -> bool:
        """May the value of `node` derive from a traced parameter (`Tracing.traced_value`): does a
        dynamic name of it have a traced binding in a scope its lookup may reach?"""
        names = self.dynamic_names(node)
        return bool(names) and self._sees_traced(scope_of(self.sketch, node), names)

    def _sees_traced(self, scope: ast.AST | None, names: Iterable[str]) -> bool:
        traced = self.traced_bindings()
        return any((where, name) in traced for where in self._chain(scope) for name in names)

    def traced_bindings(self) -> set[tuple[int, str]]:
        """(scope, name) pairs that may hold a traced value (`Tracing._origin`), the module as 0: a
        parameter a root traces, a parameter of a function traced code calls by name (given a
        value that may be traced, where the call's arguments map onto the parameters as
        `argument_for` maps them), and a name assigned (`=`, `:=`) from a value with such a name
        in sight. `for` targets, `+=` and `*args` start none."""
        if self._traced_bindings is None:
            traced = self._traced_bindings = {(id(root.function), name) for root in self.traced_roots().values()
                                              for name in self._root_parameters(root)}
            readers = self._assignment_readers()
            for call, function in self._called_by_name():
                mapped = _mapped_arguments(self.sketch, call, function)
                if mapped is None:
                    traced.update((id(function), arg.arg) for arg in parameters(function))
                for parameter, value in mapped or ():
                    reader = (scope_of(self.sketch, call), value, {(id(function), parameter)})
                    for name in self.dynamic_names(value):
                        readers.setdefault(name, []).append(reader)
            pending = [name for _, name in traced]
            while pending:
                for scope, value, targets in readers.get(pending.pop(), ()):
                    if self._sees_traced(scope, self.dynamic_names(value)):
                        for target in targets - traced:
                            traced.add(target)
                            pending.append(target[1])
        return self._traced_bindings

    def _root_parameters(self, root: Root) -> Iterator[str]:
        """The parameters a root may trace (`Tracing._root_traces`): positional, without a
        default, not bound before the transform sees them, at a traced position; for a filter_*
        transform, only one that may hold an array or a key."""
        arguments = root.function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        first_default = len(positional) - len(arguments.defaults)
        for index, arg in enumerate(positional[:first_default]):
            if any(_traces(way, index, arg.arg, len(positional)) and (
                    not way.filtered or self.sketch.arrays.parameter_may_hold(root.function, arg))
                   for way in root.ways):
                yield arg.arg

    def _chain(self, scope: ast.AST | None) -> list[int]:
        """The scopes a name used in `scope` may be looked up in (`ScopeIndex.lookup`): itself,
        the scopes around it but class bodies, and the module (0)."""
        key = id(scope)
        if key not in self._chains:
            found = []
            current, first = scope, True
            while current is not None:
                if first or not isinstance(current, ast.ClassDef):
                    found.append(id(current))
                current, first = scope_of(self.sketch, current), False
            self._chains[key] = [*found, 0]
        return self._chains[key]

    def dynamic_names(self, node: ast.AST) -> frozenset[str]:
        """Names whose tracedness reaches the value of `node` (`tracing.dynamic_names`): not those
        under a static attribute (`x.shape`), in a static call (`len(x)`, `isinstance`), in an
        `is`/`is not` comparison, or in a lambda or comprehension."""
        key = id(node)
        if key not in self._dynamic:
            found: set[str] = set()
            stack = [node]
            while stack:
                current = stack.pop()
                if isinstance(current, ast.Name):
                    found.add(current.id)
                elif isinstance(current, ast.Attribute):
                    if not jax_api.static_attribute(current.attr):
                        stack.append(current.value)
                elif isinstance(current, ast.Call):
                    if not self._static_call(current.func):
                        stack.extend(current.args)
                        stack.extend(keyword.value for keyword in current.keywords)
                        if not isinstance(current.func, ast.Name):
                            stack.append(current.func)
                elif isinstance(current, ast.Compare):
                    if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in current.ops):
                        stack.append(current.left)
                        stack.extend(current.comparators)
                elif not isinstance(current, (ast.Lambda, *COMPREHENSIONS)):
                    stack.extend(children(current))
            self._dynamic[key] = frozenset(found)
        return self._dynamic[key]

    def _static_call(self, func: ast.expr) -> bool:
        """Is every function `func` may name static (`len`): the model's qualname, or the builtin
        name when it has none, is among these."""
        names = set(self.sketch.qualnames(func))
        if isinstance(func, ast.Name):
            names.add(func.id)
        return bool(names) and all(jax_api.static_function(name) for name in names)

    def _called_by_name(self) -> Iterator[tuple[ast.Call, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """Calls of traced code and the functions they may call by a name (`f(x)`,
        `jax.jit(f)(x)`: `SketchArrays.callees_of`, as `Facts.callee` sees through function
        wrappers only), the calls whose arguments `Tracing._parameter_origin` follows. A method
        is called by a bare name only from its class body."""
        for node in self.nodes_in(self.traced(), (ast.Call,)):
            call = cast(ast.Call, node)
            for function in self.sketch.arrays.callees_of(call.func):
                owner = self.sketch.parent(function)
                if not isinstance(owner, ast.ClassDef) or scope_of(self.sketch, call) is owner:
                    yield call, function

    def _assignment_readers(self) -> dict[str, list[tuple[ast.AST | None, ast.expr, set[tuple[int, str]]]]]:
        """Name -> the assignments (`=`, annotated `=`, `:=`) whose value it is dynamic in: the
        value's scope, the value, and the (scope, name) bindings made. Only those in traced code
        can read a traced binding, unless traced code declares a `global`."""
        readers: dict[str, list[tuple[ast.AST | None, ast.expr, set[tuple[int, str]]]]] = {}
        kinds = (ast.Assign, ast.AnnAssign, ast.NamedExpr)
        if any(True for _ in self.nodes_in(self.traced(), (ast.Global,))):
            nodes: Iterable[ast.AST] = self.sketch.of_type(*kinds)
        else:
            nodes = self.nodes_in(self.traced(), kinds)
        for node in nodes:
            value = node.value  # type: ignore[attr-defined]
            if value is None:
                continue
            scope = scope_of(self.sketch, node)
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[attr-defined]
            made = {(self._binding_scope(scope, name), name) for target in targets for name in _target_names(target)}
            for name in self.dynamic_names(value):
                readers.setdefault(name, []).append((scope, value, made))
        return readers

    def _binding_scope(self, scope: ast.AST | None, name: str) -> int:
        """Where an assignment in `scope` binds `name`: there, or the module under `global`."""
        if scope is None:
            return 0
        if not self.sketch.of_type(ast.Global):
            return id(scope)
        if id(scope) not in self._globals:
            self._globals[id(scope)] = {name for node in _scope_nodes(scope) if isinstance(node, ast.Global)
                                        for name in node.names}
        return 0 if name in self._globals[id(scope)] else id(scope)

    # -- where names are bound ------------------------------------------------------------------

    def binds_locally(self, node: ast.AST, name: str) -> bool:
        """Does the innermost scope around `node` (as odelint.analysis.scopes draws scopes) bind
        `name` itself, as a parameter or a target, without declaring it `global`?"""
        scope = scope_of(self.sketch, node)
        return scope is not None and self.binds_in(scope, name)

    def binds_in(self, scope: ast.AST, name: str) -> bool:
        """Does this scope (a function, lambda, class or comprehension) bind `name` itself?
        Its own code is walked once for every name it binds (asked for most calls of a file)."""
        bound = self._bound.get(id(scope))
        if bound is None:
            stored, declared = set(), set()
            for inner in _scope_nodes(scope):
                if isinstance(inner, ast.Global):
                    declared.update(inner.names)
                elif isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                    stored.add(inner.id)
            if isinstance(scope, FUNCTIONS):
                stored.update(arg.arg for arg in _every_parameter(scope))
            bound = self._bound[id(scope)] = frozenset(stored - declared)
        return name in bound

    def last_assigned(self, use: ast.Name) -> ast.expr | None:
        """The value of `name = value`, when that is the last binding of the name in the function
        the read `use` is in before it (`Facts._name_kind` takes that binding's kind when known;
        when not, the union of every binding's kinds holds that unknown one, so the name can
        only be of a kind that value may be). None where the function binds the name otherwise
        there (a parameter, a loop or tuple target, `+=`, ...), the assignment holds the read,
        or the read is in a lambda, comprehension or the module."""
        last = self.last_binding(use)
        return last.value if last is not None and not last.path else None

    def last_binding(self, use: ast.Name) -> _Binding | None:
        """The binding of the name a read in its own function sees (`arrays._array_valued`: the
        last one before it there, ended before it): the parameter, or an assignment with its
        value, through a tuple target too (`a, name = value`, with where the name stands). None
        where that is not known (another scope's binding, `global`, a lambda or comprehension)."""
        scope = scope_of(self.sketch, use)
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        at = (use.lineno, use.col_offset)
        before = [binding for binding in self._bindings_of(scope, use.id) or () if binding.start < at]
        return before[-1] if before and before[-1].end <= at else None

    def _bindings_of(self, scope: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[_Binding] | None:
        """The bindings of `name` in the function's own code, in the order of the source; None
        where it may be bound in another scope's way (`global`, `nonlocal`, `:=`)."""
        table = self._bindings.get(id(scope))
        if table is None:
            table = self._bindings[id(scope)] = self._scope_bindings(scope)
        bindings, elsewhere = table
        if name in elsewhere or name in self._walrus_targets():
            return None
        return bindings.get(name, [])

    def _scope_bindings(self, scope: ast.FunctionDef | ast.AsyncFunctionDef
                        ) -> tuple[dict[str, list[_Binding]], set[str]]:
        """Every name's bindings in the function's own code, sorted by where they start, from
        one walk of it (`last_binding` asks for several names of one function); and the names
        it declares `global` or `nonlocal`."""
        start = (scope.lineno, scope.col_offset)
        bindings: dict[str, list[_Binding]] = {}
        for arg in _every_parameter(scope):
            bindings.setdefault(arg.arg, []).append(_Binding(start, start, None, parameter=arg))
        elsewhere: set[str] = set()
        for node in _scope_nodes(scope):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                elsewhere.update(node.names)
            for name, where in node_bindings(node, self.sketch.parent(node)):
                unpacked = self._unpacked(node, where) if isinstance(node, ast.Name) else where
                bindings.setdefault(name, []).append(unpacked)
        for found in bindings.values():
            found.sort(key=lambda binding: binding.start)
        return bindings, elsewhere

    def _walrus_targets(self) -> frozenset[str]:
        """The names a `:=` anywhere in the file binds (it binds in the scope around a comprehension)."""
        if self._walrus is None:
            self._walrus = frozenset(named.target.id for named in self.sketch.of_type(ast.NamedExpr)
                                     if isinstance(named.target, ast.Name))
        return self._walrus

    def _unpacked(self, name: ast.Name, binding: _Binding) -> _Binding:
        """A name stored in a tuple target of a single-target assignment, with the value and
        its path there; any other binding as it is."""
        path: list[int] = []
        child: ast.expr = name
        parent = self.sketch.parent(name)
        while isinstance(parent, (ast.Tuple, ast.List)):
            path.insert(0, parent.elts.index(child))
            child, parent = parent, self.sketch.parent(parent)
        if not path or not (isinstance(parent, ast.Assign) and parent.targets == [child]):
            return binding
        end = (parent.end_lineno or 0, parent.end_col_offset or 0)
        return _Binding(binding.start, end, parent.value, tuple(path))


class Own:
    """A function's own code: its nodes (not those of functions nested in it), the names and
    the attribute names it calls or passes to calls (but to a host callback), the functions
    nested directly in it, and whether it calls anything."""

    __slots__ = ("attributes", "calls", "inner", "names", "nodes")

    def __init__(self, function: FunctionNode, runs_elsewhere: Callable[[ast.Call], bool]) -> None:
        self.nodes: list[ast.AST] = []
        self.inner: list[FunctionNode] = []
        self.names: set[str] = set()
        self.attributes: set[str] = set()
        calls = False
        stack = list(children(function))
        while stack:
            node = stack.pop()
            if isinstance(node, FUNCTIONS):
                self.inner.append(node)
                continue
            self.nodes.append(node)
            if isinstance(node, ast.Call):  # what `Reach._targets` follows: the callee, and functions passed on
                calls = True
                self._callee(node.func)
                if not runs_elsewhere(node):
                    for arg in (*node.args, *(keyword.value for keyword in node.keywords)):
                        self._named(arg.value if isinstance(arg, ast.Starred) else arg)
            stack.extend(children(node))
        self.calls = calls

    def _named(self, value: ast.expr) -> None:
        if isinstance(value, ast.Name):
            self.names.add(value.id)
        elif isinstance(value, ast.Attribute):
            self.attributes.add(value.attr)

    def _callee(self, func: ast.expr) -> None:
        """What calling `func` may run (`Reach.function`): `f`, a method `f` of `obj.f`, and
        what `jax.jit(f)` or `partial(f, ...)` wraps."""
        while isinstance(func, ast.Call) and func.args and not isinstance(func.args[0], ast.Starred):
            func = func.args[0]
        self._named(func)


def _mapped_arguments(sketch: Sketch, call: ast.Call,
                      function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.expr]] | None:
    """The (parameter, argument) pairs of `f(a, b=c)` calling the `def f` of a plain function,
    by keyword, else by position (`argument_for` with nothing bound); a parameter left to its
    default gets nothing. None where the model may map the call otherwise or the pre-check
    cannot tell: a wrapper or another name (`jax.jit(f)(x)`, `g(x)` for `g = partial(f, a)`),
    a method, a `*args` or `**kwargs` in the call."""
    func = call.func
    if not (isinstance(func, ast.Name) and func.id == function.name) or isinstance(
            scope_of(sketch, function), ast.ClassDef):
        return None
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
        return None
    given = {keyword.arg: keyword.value for keyword in call.keywords}
    found = [(name, given[name] if name in given else call.args[index])
             for index, name in enumerate(positional_names(function)) if name in given or index < len(call.args)]
    return found + [(arg.arg, given[arg.arg]) for arg in function.args.kwonlyargs if arg.arg in given]


def given_at(call: ast.Call, keywords: tuple[str, ...], position: int) -> Iterator[ast.expr]:
    """What `argument_at` may find for a parameter: by one of its keywords, or at its position."""
    yield from (keyword.value for keyword in call.keywords if keyword.arg in keywords)
    if position < len(call.args) and not any(isinstance(arg, ast.Starred) for arg in call.args[:position + 1]):
        yield call.args[position]


def _body_targets(call: ast.Call, body: jax_api.TracedBody) -> Iterator[ast.expr]:
    """The functions a traced-body call is given (`tracing._body_functions`)."""
    for index, position in enumerate(body.functions):
        keyword = body.keywords[index] if index < len(body.keywords) else None
        yield from given_at(call, (keyword,) if keyword else (), position)
    for index, position in enumerate(body.lists, start=len(body.functions)):
        keyword = body.keywords[index] if index < len(body.keywords) else None
        for given in given_at(call, (keyword,) if keyword else (), position):
            if isinstance(given, (ast.List, ast.Tuple)):
                yield from given.elts


def _positional_before_star(call: ast.Call) -> int:
    count = 0
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        count += 1
    return count


def _filtering(transforms: frozenset[str]) -> bool:
    """Are these (a call's or a decorator's meanings) all Equinox filter_* transforms?"""
    rows = jax_api.transforms()
    return bool(transforms) and all(rows[name].filtered for name in transforms)


def _traces(way: Way, index: int, name: str, count: int) -> bool:
    """May a transform given this way trace the parameter at `index` (`Tracing._root_traces`)?"""
    position = index - way.bound
    if position < 0 or name in way.static_names:
        return False
    static = {n + count - way.bound if n < 0 else n for n in way.static_numbers}
    return position not in static and (way.params is None or position in way.params)


def static_options_of(call: ast.Call, meanings: set[str] | frozenset[str]) -> tuple[frozenset[str], frozenset[int]]:
    """What a transform's options call marks static (`_record`), by the keywords every meaning
    the call's function may have takes as static."""
    transforms = jax_api.transforms()
    keywords = set.intersection(*(set(transforms[name].static) for name in meanings)) if meanings else set()
    return static_options(call, keywords)


@functools.cache
def _wrappers_and_partial() -> frozenset[str]:
    """What `_unwrapped` sees through: the function wrappers (`jax.jit`) and `functools.partial`."""
    return jax_api.function_wrappers() | {PARTIAL}


@functools.cache
def tracing_transforms() -> frozenset[str]:
    """The transforms that trace the function they are given (`jax.jit`, `jax.vmap`, ...)."""
    return frozenset(name for name, row in jax_api.transforms().items() if row.traces)


def scope_of(sketch: Sketch, node: ast.AST) -> ast.AST | None:
    """The innermost scope node around `node`: a function's decorators, defaults and annotations
    are in the scope around it, a class's bases too; a comprehension holds all of itself."""
    child, current = node, sketch.parent(node)
    while current is not None:
        if isinstance(current, COMPREHENSIONS):
            return current
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and child in current.body:
            return current
        if isinstance(current, ast.Lambda) and child is current.body:
            return current
        child, current = current, sketch.parent(current)
    return None


def _scope_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's own code, not those of the scopes nested in it."""
    stack: list[ast.AST] = (
        list(scope.body) if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        else [scope.body] if isinstance(scope, ast.Lambda) else list(children(scope)))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(children(node))


# -- loops, as odelint.analysis.keys walks them ---------------------------------------------------

def repeating_loop(sketch: Sketch, node: ast.AST) -> ast.AST | None:
    """The innermost loop of `node`'s function whose repeated part holds `node` (`KeyUses._loop`):
    a `for` body, a `while` test or body, a comprehension but its first iterable; a loop's
    head and `else` run once, so the search goes on outwards from them."""
    child, current = node, sketch.parent(node)
    while current is not None and not isinstance(current, (*FUNCTIONS, ast.ClassDef)):
        if isinstance(current, (ast.For, ast.AsyncFor)) and child in current.body:
            return current
        if isinstance(current, ast.While) and (child is current.test or child in current.body):
            return current
        if isinstance(current, COMPREHENSIONS) and child is not current.generators[0]:
            return current
        if isinstance(current, ast.comprehension) and child is not current.iter:
            return sketch.parent(current)
        child, current = current, sketch.parent(current)
    return None


def rebinds_each_iteration(loop: ast.AST, name: str) -> bool:
    """Does every iteration of `loop` bind `name` afresh: as a loop target, or by an assignment
    among the body's own statements (not one inside an `if`)?"""
    if isinstance(loop, COMPREHENSIONS):
        return any(_binds_name(generator.target, name) for generator in loop.generators)
    if isinstance(loop, (ast.For, ast.AsyncFor)) and _binds_name(loop.target, name):
        return True
    return any(_assigns(statement, name) for statement in loop.body)  # type: ignore[attr-defined]


def bound_before(sketch: Sketch, loop: ast.AST, node: ast.AST, name: str) -> bool:
    """Is `name` given a fresh value in each iteration of `loop` before `node` runs again: by
    the statement holding `node`, in whose value it is (`key, sub = split(key)`), or by a
    statement before that one in a block of the loop's body that holds it (`key, sub =
    split(key)` just above `draw(sub)`, inside an `if` too)? `KeyUses` walks the statements
    in order, so such a use never meets the last iteration's value. (A comprehension has no
    statements.)"""
    path = _path_up(sketch, node)
    if path is None or isinstance(loop, COMPREHENSIONS):
        return False
    statement = next((above for above in path if isinstance(above, ast.stmt)), None)
    if statement is not None and _assigns(statement, name) and _in_value(path, statement):
        return True  # `key, sub = split(key)`: the next use meets the new key
    for inner, outer in zip(path, path[1:], strict=False):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(outer, field, None)
            if (outer is loop and field != "body") or not isinstance(block, list):
                continue  # a loop's `else` runs once
            place = _place(block, inner)
            if place is not None and any(_assigns(statement, name) for statement in block[:place]):
                return True
        if outer is loop:
            return False
    return False


def bound_between(sketch: Sketch, first: ast.AST, second: ast.AST, name: str) -> bool:
    """Is `name` surely given a fresh value after `first` runs and before `second` does (`first`
    comes first in the file), the way `KeyUses` follows statements? That is an assignment of it
    among the statements of the block holding both, from `first`'s own statement (`first` in
    the assigned value) up to `second`'s, or later in a block around `first` before control
    leaves it (`_rebound_inside`); or the two sit in the two branches of one `if` or two cases
    of one `match`. In a loop, `second` runs before `first` too, on the next iteration: the
    value must be fresh on that way round as well. A use inside a lambda may run later:
    nothing separates it."""
    up, down = _path_up(sketch, first), _path_up(sketch, second)
    if up is None or down is None:
        return False
    depth = {id(node): number for number, node in enumerate(up)}
    meeting = next((number for number, node in enumerate(down) if id(node) in depth), None)
    if meeting is None or meeting == 0 or depth[id(down[meeting])] == 0:
        return False  # one holds the other
    common, early, late = down[meeting], up[depth[id(down[meeting])] - 1], down[meeting - 1]
    if isinstance(common, ast.If) and _place(common.body, early) is not None \
            and _place(common.orelse, late) is not None:
        return _fresh_each_time(sketch, common, name)
    if isinstance(common, ast.Match) and isinstance(early, ast.match_case) and isinstance(late, ast.match_case):
        return _fresh_each_time(sketch, common, name)  # two cases of one `match`
    for field in ("body", "orelse", "finalbody"):
        block = getattr(common, field, None)
        if not isinstance(block, list):
            continue
        start, end = _place(block, early), _place(block, late)
        if start is None or end is None:
            continue
        after_first = block[start + (0 if _in_value(up, early) else 1):end]
        if not (any(_assigns(statement, name) for statement in after_first)
                or (meeting >= 2 and _loop_binds(late, down[meeting - 2], name))
                or _rebound_inside(up, early, name) or _bound_before(down, late, name)):
            return False
        if _repeated_part(sketch, common, field) is None:
            return True
        round_again = [*block[end + (0 if _in_value(down, late) else 1):], *block[:start]]
        return (any(_assigns(statement, name) for statement in round_again)
                or _rebound_inside(down, late, name) or _bound_before(up, early, name))
    return False


def _fresh_each_time(sketch: Sketch, branching: ast.AST, name: str) -> bool:
    """Two branches of one `if` (or cases of one `match`) never run in one pass: is `name` fresh
    again whenever the statement runs once more? It is, outside a loop; in a `for` loop whose
    target binds it (`for layer, key in zip(layers, keys)`); and in a loop whose body assigns
    it before the statement on every way in (`kx, ky = split(key(0))` first in the body)."""
    loop = repeating_loop(sketch, branching)
    if loop is None or (isinstance(loop, (ast.For, ast.AsyncFor)) and _binds_name(loop.target, name)):
        return True
    path = _path_up(sketch, branching)
    return path is not None and _bound_before(path, loop, name)


def _rebound_inside(up: list[ast.AST], early: ast.AST, name: str) -> bool:
    """Is `name` surely given a fresh value after the use `up` starts from and before control
    leaves `early`, the statement around it: an assignment later in a block around the use,
    inside `early` (`if train: key, sub = split(key)`), with no jump (`break`, `return`, ...)
    before it, and not in the body of a `try` (whose handler may run from anywhere)?"""
    for below, above, block, position in _blocks_around(up, early):
        if isinstance(above, (ast.Try, ast.TryStar)) and block is above.body:
            return False
        for statement in block[position + (0 if _in_value(up, below) else 1):]:
            if _assigns(statement, name):
                return True
            if _may_jump(statement):
                return False
    return False


def _bound_before(path: list[ast.AST], outer: ast.AST, name: str) -> bool:
    """Is `name` assigned by a statement before the use `path` starts from, in a block around
    it inside `outer`: every way into the use runs that statement first."""
    return any(_assigns(statement, name) for _, _, block, position in _blocks_around(path, outer)
               for statement in block[:position])


def _blocks_around(path: list[ast.AST], outer: ast.AST) -> Iterator[tuple[ast.AST, ast.AST, list[ast.stmt], int]]:
    """For each block of statements around the node `path` starts from, inside `outer`: the
    statement of the block on the path, what holds the block, the block, and that statement's
    place in it; innermost first."""
    for below, above in zip(path, path[1:], strict=False):
        if below is outer:
            return
        for field in _BLOCK_FIELDS:
            block = getattr(above, field, None)
            position = _place(block, below) if isinstance(block, list) else None
            if block is not None and position is not None:
                yield below, above, block, position


def _may_jump(statement: ast.AST) -> bool:
    """May control leave the statement other than by its end (`break`, `continue`, `return`,
    `raise`), outside the functions defined in it?"""
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Break, ast.Continue, ast.Return, ast.Raise)):
            return True
        if not isinstance(node, (*FUNCTIONS, ast.ClassDef)) or node is statement:
            stack.extend(children(node))
    return False


_BLOCK_FIELDS = ("body", "orelse", "finalbody")


def _loop_binds(loop: ast.AST, part: ast.AST, name: str) -> bool:
    """Is `part` a statement of a `for` loop's body, whose target gives `name` a new value
    before each run of it (`for key in keys: draw(key)`)?"""
    return isinstance(loop, (ast.For, ast.AsyncFor)) and _binds_name(loop.target, name) and any(
        statement is part for statement in loop.body)


def _path_up(sketch: Sketch, node: ast.AST) -> list[ast.AST] | None:
    """`node` and the nodes around it, innermost first (None inside a lambda)."""
    path = [node]
    while (above := sketch.parent(path[-1])) is not None:
        if isinstance(above, ast.Lambda):
            return None
        path.append(above)
    return path


def _in_value(path: list[ast.AST], statement: ast.AST) -> bool:
    """Is the node the path starts from inside the statement's assigned value?"""
    value = getattr(statement, "value", None)
    below = next(number for number, node in enumerate(path) if node is statement) - 1
    return value is not None and below >= 0 and path[below] is value


def _repeated_part(sketch: Sketch, node: ast.AST, field: str) -> ast.AST | None:
    """The loop that runs `node`'s `field` block again and again, if any (`repeating_loop`)."""
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and field == "body":
        return node
    return repeating_loop(sketch, node)


def _place(block: list[ast.stmt], node: ast.AST) -> int | None:
    """Where `node` is among the block's statements (None: not one of them)."""
    return next((number for number, statement in enumerate(block) if statement is node), None)


def _assigns(statement: ast.AST, name: str) -> bool:
    """Does the statement give `name` a value (`key = ...`, `key, sub = ...`, `key: T = ...`,
    `key += ...`; a bare annotation `key: T` gives none)?"""
    if isinstance(statement, ast.Assign):
        return any(_binds_name(target, name) for target in statement.targets)
    if isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        return statement.value is not None and _binds_name(statement.target, name)
    return False


def _target_names(target: ast.AST) -> Iterator[str]:
    """The names an assignment target binds (`a, *rest`), not those an item or attribute target
    reads (`found[k] = x` binds neither `found` nor `k`)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element)
    elif isinstance(target, ast.Starred):
        yield from _target_names(target.value)


def _binds_name(target: ast.AST, name: str) -> bool:
    """`name`, or `name` inside a tuple or starred target (`_rebind`); not `x[i]` or `x.a`."""
    return name in _target_names(target)


@dataclasses.dataclass(frozen=True)
class _Binding:
    """Where a binding of a name starts and ends in the source, and its value when it is a
    plain `name = value` (None for any other way of binding)."""

    start: tuple[int, int]
    end: tuple[int, int]
    value: ast.expr | None
    path: tuple[int, ...] = ()  # where in a tuple target the name stands (`a, (b, c) = value`)
    parameter: ast.arg | None = None  # the function's parameter of that name


def node_bindings(node: ast.AST, parent: ast.AST | None) -> Iterator[tuple[str, _Binding]]:
    """The bindings `node` makes, by name: `name = value` with its value, any other store or
    deletion of a name, an import, `except ... as name`, a `match` capture, a `def` or `class`."""
    if isinstance(node, ast.Assign):
        target = node.targets[0] if len(node.targets) == 1 else None
        if isinstance(target, ast.Name):
            yield target.id, _Binding((target.lineno, target.col_offset),
                                      (node.end_lineno or 0, node.end_col_offset or 0), node.value)
        return
    names: list[str | None]
    if isinstance(node, ast.Name):
        plain = isinstance(parent, ast.Assign) and parent.targets == [node]  # the `Assign` is the binding
        names = [node.id if not isinstance(node.ctx, ast.Load) and not plain else None]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler, ast.MatchAs,
                           ast.MatchStar)):
        names = [node.name]
    elif isinstance(node, ast.MatchMapping):
        names = [node.rest]
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        names = [alias.asname or alias.name.split(".")[0] for alias in node.names]
    else:
        return
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    for name in names:
        if name is not None:
            yield name, _Binding(start, start, None)


def _every_parameter(function: FunctionNode) -> list[ast.arg]:
    """Every parameter a function binds, `*args` and `**kwargs` too."""
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
            *(arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None)]
