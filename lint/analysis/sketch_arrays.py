"""Which values of a sketched file the model could find to be JAX arrays, or traced.

`may_be_array` over-approximates `Facts.kind(...) is Kind.ARRAY` (odelint.analysis.facts),
following the model's own rules:
- a name only if one of the bindings the model's lookup finds for it (in its scope, LEGB) may
  be an array: an annotation that declares one (the
  outer name, `jax.Array`, `Float[Array, "n"]`; a string declares nothing), an assignment of
  a value that may be one (through tuple unpacking, and into the returns of a function of
  this file: `a, b = f()`), a `for` target over a display one of whose elements may be one
  (`Facts.elements`: a list, tuple or set display, a dict's keys, a comprehension's element,
  through names assigned one), or a parameter for which some call of its function by name (or
  through a wrapper: `jax.jit(f)(x)`) may pass an array (`_param_kind`);
- a call's result only if the function may be a JAX function returning arrays
  (jax_api.returns_array), an array method of a value that may be an array (`x.sum()`,
  `x.at[i].set(v)`), or a function of this file one of whose returns may be an array;
- `x.T` (`.mT`, `.real`, `.imag`) only of an array; `obj.w` only where `obj` is named like
  some method's first parameter (`self`) and a class body declares `w` an array or some
  `__init__` assigns `<name>.w` one at its top level (`_attribute_kind`);
- `x[i]` only of an array (or `f()[0]` of a function returning one there); arithmetic only
  with an operand that may be one; nothing else (literals, containers, comparisons, `a if c
  else b`, lambdas, `for` targets).
These facts feed each other (a parameter from an assigned name, a return from a parameter),
so they are solved together: the least fixpoint, grown from the declarations.

`may_be_array_or_key` over-approximates `Facts.kind(...) in (ARRAY, KEY)` the same way, grown
also from key annotations and the functions that return keys (`jax.random.split`, also
unpacked: `key, sub = jax.random.split(key)`).

Both are answered by name first (every binding of a name anywhere in the file counts:
cheap), and only where that says maybe by scope (`_Scopes`, one more walk of the file).
What may be traced is `SketchReach.may_be_traced`'s question.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterator
from typing import TYPE_CHECKING

from odelint.analysis import jax_api, literals
from odelint.analysis.arrays import NUMPY_ANNOTATIONS
from odelint.analysis.facts import _ARRAY_METHODS as ARRAY_METHODS
from odelint.analysis.jax_api import function_wrappers
from odelint.analysis.sketch import children
from odelint.analysis.sketch_calls import positional_names

if TYPE_CHECKING:
    from odelint.analysis.sketch import FunctionNode, Sketch

Path = tuple[int, ...]
ARRAY = ("array",)
ARRAY_OR_KEY = ("array", "key")
_VIEWS = frozenset({"T", "mT", "real", "imag"})  # attributes of an array that are arrays
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")  # fields of compound statements holding code
_COMPREHENSIONS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class SketchArrays:
    """Each answer is the conjunction of two sound ones: names keyed by name (`_Names`), then,
    only where that says maybe, by scope (`_Scopes`)."""

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._solutions: dict[tuple[str, ...], list[_Solution]] = {}  # by the kinds they grow from
        self._scopes: _Scopes | None = None
        self._callees: dict[int, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self._receivers: frozenset[str] | None = None
        self._by_callee: dict[str, list[ast.Call]] | None = None

    def may_be_array(self, node: ast.expr) -> bool:
        """Could the model find `node` to be an array (`Facts.kind` ARRAY, NumPy's included)?"""
        return all(solution.may_be_array(node) for solution in self._stages(ARRAY)) and self._last_may(node, ARRAY)

    def may_be_array_or_key(self, node: ast.expr) -> bool:
        """Could the model find `node` to be an array or a PRNG key (`Facts.kind` ARRAY or KEY)?"""
        return (all(solution.may_be_array(node) for solution in self._stages(ARRAY_OR_KEY))
                and self._last_may(node, ARRAY_OR_KEY))

    def parameter_may_hold(self, function: FunctionNode, parameter: ast.arg) -> bool:
        """Could `Facts.binding_kind` find this parameter an array or a key (what an Equinox
        filter_* transform traces)? Its annotation may say so; else only calls of the function
        may (`_Sources._parameters`), and a function the file never calls needs no solving."""
        if parameter.annotation is not None and self.may_declare(parameter.annotation, *ARRAY_OR_KEY):
            return True
        name = getattr(function, "name", None)
        if name != "__init__" and name not in self.calls_by_callee():
            return False
        return all(solution.holds_parameter(function, parameter) for solution in self._stages(ARRAY_OR_KEY))

    def calls_by_callee(self) -> dict[str, list[ast.Call]]:
        """Calls indexed by the names of the functions they may run (`_calls_by_callee`), once."""
        if self._by_callee is None:
            self._by_callee = _calls_by_callee(self.sketch)
        return self._by_callee

    def _last_may(self, node: ast.expr, kinds: tuple[str, ...]) -> bool:
        """A name read after `name = value` in its own function is of a kind that value may be
        (`SketchReach.last_assigned`): `x = jnp.zeros(3)` then `x = tuple(x.tolist())` is no
        array after the second."""
        value = self.sketch.reach.last_assigned(node) if isinstance(node, ast.Name) else None
        if value is None:
            return True
        return self.may_be_array(value) if kinds is ARRAY else self.may_be_array_or_key(value)

    def may_declare_array(self, annotation: ast.expr) -> bool:
        return self.may_declare(annotation, "array")

    def may_declare(self, annotation: ast.expr, *kinds: str) -> bool:
        """Does the annotation's outer name (`Float` of `Float[Array, "n"]`) possibly name a
        type of these kinds ("array", "key": `Facts.annotation_kind`)? A string annotation has
        no qualified name."""
        outer = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        return any(jax_api.annotation_kind(name) in kinds for name in self.sketch.qualnames(outer))

    def may_be_jax_array(self, node: ast.expr) -> bool:
        """Could `arrays.is_jax_array` hold: an array that is no field the method's class
        declares a NumPy array (`self.registers[i] = r` where `registers: np.ndarray`)?"""
        return self.may_be_array(node) and not self._numpy_field(node)

    def _numpy_field(self, node: ast.expr) -> bool:
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            return False
        function = self.sketch.enclosing_function(node)
        owner = self.sketch.parent(function) if function is not None else None
        positional = positional_names(function) if function is not None else []
        if not isinstance(owner, ast.ClassDef) or not positional or positional[0] != node.value.id:
            return False
        return any(isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                   and item.target.id == node.attr and self._declares_numpy(item.annotation) for item in owner.body)

    def _declares_numpy(self, annotation: ast.expr) -> bool:
        """`arrays._declared_numpy`: the annotation, or (subscripted) its type or an element
        (`Float[np.ndarray, "n"]`), names a NumPy array type."""
        names = [annotation]
        if isinstance(annotation, ast.Subscript):
            inner = annotation.slice
            names = [annotation.value, *(inner.elts if isinstance(inner, ast.Tuple) else [inner])]
        return any(self.sketch.qualnames(name) & NUMPY_ANNOTATIONS for name in names)

    def method_receivers(self) -> frozenset[str]:
        """The names methods call their first parameter (`self`): only an attribute of one
        may be a field the model types (`Facts._method_class_of_self`)."""
        if self._receivers is None:
            self._receivers = frozenset(
                positional[0] for classes in self.sketch.classes.values() for cls in classes for item in cls.body
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                and (positional := positional_names(item))
                and not any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod")
                            for d in item.decorator_list))
        return self._receivers

    def callees_of(self, func: ast.expr) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The functions of this file a call of `func` may run (`Facts.callee`)."""
        key = id(func)
        if key not in self._callees:
            self._callees[key] = [f for name in _callee_names(self.sketch, func, set())
                                  for f in self.sketch.defs.get(name, ())]
        return self._callees[key]

    def _stages(self, kinds: tuple[str, ...]) -> Iterator[_Solution]:
        """The solution by name, then (built only when asked) the one by scope, for values of
        these kinds (the scopes, one walk of the file, are drawn once for every kind)."""
        solutions = self._solutions.setdefault(kinds, [])
        if not solutions:
            solutions.append(_Solution(self, _Names(), kinds))
        yield solutions[0]
        if len(solutions) == 1:
            if self._scopes is None:
                self._scopes = _Scopes(self.sketch.tree)
            solutions.append(_Solution(self, self._scopes, kinds))
        yield solutions[1]


class _Names:
    """Names keyed by themselves: every binding of `x` anywhere in the file is `x`'s."""

    def use(self, node: ast.Name) -> Hashable:
        return node.id

    def target(self, node: ast.Name) -> Hashable:
        return node.id

    def parameter(self, function: FunctionNode, arg: ast.arg) -> Hashable:
        return arg.arg


_ANY = object()  # the key of a name the file does not hold (a node built by a caller): may be anything


class _Scopes:
    """Names keyed by the scope that holds their bindings, as odelint.analysis.scopes draws
    scopes (functions, lambdas, classes, comprehensions, the module; `global` names bound in
    the module) and `ScopeIndex.lookup` searches them (LEGB, class bodies invisible to
    nested functions). A name bound nowhere has no key (a builtin: never an array)."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = _Scope(None, False)
        self._of: dict[int, _Scope] = {}  # Name -> its scope; function or lambda -> its body's
        self._walk(tree)
        for scope in set(self._of.values()):  # `global x` binds x in the module
            self.module.bound |= scope.bound & scope.global_names

    def use(self, node: ast.Name) -> Hashable:
        """The key of the bindings a read of `node` finds (`ScopeIndex.lookup`), None if none."""
        scope = self._of.get(id(node))
        if scope is None:
            return _ANY
        if node.id in scope.global_names:
            scope = self.module
        first = True
        while scope is not None:
            if not (scope.is_class and not first) and scope.binds(node.id):
                return id(scope), node.id
            scope, first = scope.parent, False
        return None

    def target(self, node: ast.Name) -> Hashable:
        """The key of the binding an assignment to `node` makes (`global` ones: the module's)."""
        scope = self._of[id(node)]
        return id(self.module if node.id in scope.global_names else scope), node.id

    def parameter(self, function: FunctionNode, arg: ast.arg) -> Hashable:
        return id(self._of[id(function)]), arg.arg

    def _walk(self, tree: ast.Module) -> None:
        stack: list[tuple[ast.AST, _Scope]] = [(tree, self.module)]
        while stack:
            node, scope = stack.pop()
            if isinstance(node, ast.Name):
                self._of[id(node)] = scope
                if isinstance(node.ctx, ast.Store):
                    scope.bound.add(node.id)
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.extend(self._open(node, scope))
                continue
            if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                scope = _Scope(scope, False)
            elif isinstance(node, ast.Global):
                scope.global_names.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.name != "*":
                        scope.bound.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs)) and node.name:  # not `*rest`: as the model
                scope.bound.add(node.name)
            stack.extend((child, scope) for child in children(node))

    def _open(self, node: ast.AST, scope: _Scope) -> Iterator[tuple[ast.AST, _Scope]]:
        """A function, lambda or class: its name is bound around it, and decorators, bases,
        defaults and annotations evaluated there; its parameters and body are inside."""
        inner = _Scope(scope, isinstance(node, ast.ClassDef))
        self._of[id(node)] = inner
        if isinstance(node, ast.ClassDef):
            scope.bound.add(node.name)
            yield from ((child, scope) for child in (*node.decorator_list, *node.bases, *node.keywords))
            yield from ((child, inner) for child in node.body)
            return
        arguments = node.args  # type: ignore[attr-defined]
        every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                 *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
        inner.bound.update(a.arg for a in every)
        outer = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None),
                 *(a.annotation for a in every if a.annotation is not None)]
        if isinstance(node, ast.Lambda):
            yield from ((child, scope) for child in outer)
            yield node.body, inner
            return
        scope.bound.add(node.name)  # type: ignore[attr-defined]
        yield from ((child, scope) for child in (*node.decorator_list, *outer))  # type: ignore[attr-defined]
        if node.returns is not None:  # type: ignore[attr-defined]
            yield node.returns, scope  # type: ignore[attr-defined]
        yield from ((child, inner) for child in node.body)  # type: ignore[attr-defined]


class _Scope:
    """One scope: the names bound in it, its `global` names, the scope around it."""

    __slots__ = ("bound", "global_names", "is_class", "parent")

    def __init__(self, parent: _Scope | None, is_class: bool) -> None:
        self.parent, self.is_class = parent, is_class
        self.bound: set[str] = set()         # names bound here (`global` ones are the module's)
        self.global_names: set[str] = set()

    def binds(self, name: str) -> bool:
        return name in self.bound and name not in self.global_names


class _Solution:
    """What may be an array (or a key, with `kinds` ARRAY_OR_KEY; and what may be traced) with
    names keyed one way (`_Names` or `_Scopes`): the keys, attributes and function returns
    that may hold one, grown from the declarations until nothing changes (see the module
    docstring)."""

    def __init__(self, arrays: SketchArrays, keys: _Names | _Scopes, kinds: tuple[str, ...] = ARRAY) -> None:
        self.arrays, self.sketch, self.keys = arrays, arrays.sketch, keys
        self.kinds, self.keyed = kinds, "key" in kinds
        self._names: set[Hashable] = set()            # keys one of whose bindings may be an array
        self._fields: set[str] = set()                # attributes `obj.<attr>` that may be arrays
        self._returns: dict[int, set[Path]] = {}      # function -> where in what it returns an array may be
        self._solved = False

    def may_be_array(self, node: ast.expr) -> bool:
        if not self._solved:
            self._solve()
        return self._may(node)

    def holds_parameter(self, function: FunctionNode, parameter: ast.arg) -> bool:
        if not self._solved:
            self._solve()
        return self.keys.parameter(function, parameter) in self._names

    def _is(self, name: ast.Name, keys: set[Hashable]) -> bool:
        """Are the bindings `name` reads among `keys`? (A name not in the file may be anything.)"""
        key = self.keys.use(name)
        return key is _ANY or key in keys

    def _may(self, node: ast.expr) -> bool:
        """`node` may be an array given what is known so far."""
        if isinstance(node, ast.Name):
            return self._is(node, self._names)
        if isinstance(node, ast.Call):
            return self._call_may(node)
        if isinstance(node, ast.Subscript):
            index = node.slice
            return self._may(node.value) or (
                isinstance(node.value, ast.Call) and (position := literals.ast_integer(index)) is not None
                and position >= 0 and self._returns_at(node.value.func, (position,)))
        if isinstance(node, ast.Attribute):
            return ((node.attr in _VIEWS and self._may(node.value))
                    or (isinstance(node.value, ast.Name) and node.attr in self._fields
                        and node.value.id in self.arrays.method_receivers()))
        if isinstance(node, ast.BinOp):
            return self._may(node.left) or self._may(node.right)
        if isinstance(node, ast.UnaryOp):
            return self._may(node.operand)
        if isinstance(node, ast.Starred):  # `{*xs}`: the rules read the starred value
            return self._may(node.value)
        return False

    def _call_may(self, call: ast.Call) -> bool:
        """`_call_kind`: a JAX function returning arrays, a kind-preserving Equinox function of
        an array, an array method of an array, or a function of this file returning one."""
        func = call.func
        names = self.sketch.qualnames(func)
        if any(jax_api.returns_array(name) or (self.keyed and jax_api.returns_key(name)) for name in names):
            return True
        if any(name in names and position < len(call.args) and self._may(call.args[position])
               for name, position in jax_api.kind_preserving().items()):
            return True
        if isinstance(func, ast.Attribute) and func.attr in ARRAY_METHODS and self._may(_at_receiver(func.value)):
            return True
        return self._returns_at(func, ())

    def _at_path(self, value: ast.expr, path: Path) -> bool:
        """May the binding at `path` inside `a, (b, c) = value` be an array? A display is
        unpacked; a call unpacks what its function of this file returns (`_unpacked_call_kind`)."""
        for depth, position in enumerate(path):
            if not isinstance(value, (ast.Tuple, ast.List)) or position >= len(value.elts):
                return isinstance(value, ast.Call) and (self._returns_at(value.func, path[depth:]) or (
                    self.keyed and depth + 1 == len(path)
                    and any(jax_api.returns_key(name) for name in self.sketch.qualnames(value.func))))
            value = value.elts[position]
        return self._may(value)

    def _returns_at(self, func: ast.expr, path: Path) -> bool:
        return any(path in self._returns.get(id(function), ()) for function in self.arrays.callees_of(func))

    def _solve(self) -> None:
        """Grow the keys, fields and returns that may be arrays until nothing changes."""
        sources = _Sources(self.arrays, self.keys, self.kinds)
        self._names, self._fields = set(sources.declared), set(sources.declared_fields)
        self._solved = changed = True
        while changed:
            changed = False
            for key, value, path in sources.values:
                if key not in self._names and self._at_path(value, path):
                    self._names.add(key)
                    changed = True
            for key, arguments in sources.passed:
                if key not in self._names and any(self._may(argument) for argument in arguments):
                    self._names.add(key)
                    changed = True
            for attr, value in sources.init_fields:
                if attr not in self._fields and self._may(value):
                    self._fields.add(attr)
                    changed = True
            for function, value in sources.returned:
                known = self._returns.setdefault(id(function), set())
                found = set(self._paths(value)) - known
                if found:
                    known |= found
                    changed = True

    def _paths(self, value: ast.expr, path: Path = ()) -> Iterator[Path]:
        """Where inside a returned value an array may be: the whole, or elements of a display."""
        if self._may(value):
            yield path
        if isinstance(value, (ast.Tuple, ast.List)):
            for position, element in enumerate(value.elts):
                yield from self._paths(element, path + (position,))

class _Sources:
    """Where arrays come from in a file, for `_Solution._solve`, keyed by `keys`: names and
    fields declared arrays, each name's assigned values (with their tuple paths), what the
    calls of each function pass for each parameter (a class's calls pass to its `__init__`),
    `__init__`'s `self.x = ...`, returns."""

    def __init__(self, arrays: SketchArrays, keys: _Names | _Scopes, kinds: tuple[str, ...]) -> None:
        sketch = arrays.sketch
        self.kinds = kinds
        self.declared: set[Hashable] = set()
        self.declared_fields: set[str] = set()
        self.values: list[tuple[Hashable, ast.expr, Path]] = []
        self.passed: list[tuple[Hashable, list[ast.expr]]] = []
        self.init_fields: list[tuple[str, ast.expr]] = []
        self.returned: list[tuple[ast.AST, ast.expr]] = []
        for node in sketch.of_type(ast.Assign, ast.AnnAssign, ast.NamedExpr):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and arrays.may_declare(node.annotation, *kinds)):
                self.declared.add(keys.target(node.target))
            if node.value is not None:
                for target in targets:
                    self.values.extend((keys.target(name), node.value, path) for name, path in _bound(target))
        for loop in sketch.of_type(ast.For, ast.AsyncFor, ast.comprehension):
            if type(loop.target) is ast.Name:  # `for x in [a, b]`: x holds each element (`Facts.elements`)
                self.values.extend((keys.target(loop.target), element, ())
                                   for element in _elements(sketch, loop.iter, set()))
        methods: set[int] = set()
        for classes in sketch.classes.values():
            for cls in classes:
                methods.update(self._fields(arrays, cls))
        calls = arrays.calls_by_callee()
        for name, functions in sketch.defs.items():
            for function in functions:
                given = calls.get(name, [])
                owner = sketch.parent(function) if name == "__init__" else None
                if type(owner) is ast.ClassDef:  # `Holder(w)` gives `w` to `Holder.__init__` (`Facts.arguments_of`)
                    given = [*given, *calls.get(owner.name, ())]
                self._parameters(arrays, keys, function, given, 1 if id(function) in methods else 0)
                if name in calls:  # a function no call runs returns nothing to anyone
                    self.returned.extend((function, value) for value in _returns(function.body))

    def _parameters(self, arrays: SketchArrays, keys: _Names | _Scopes, function: FunctionNode,
                    calls: list[ast.Call], bound: int) -> None:
        """A parameter is declared by its annotation, else given by the calls (`argument_for`:
        by keyword, or by position when no `*args`/`**kwargs` hides it; `bound`: a method's `self`)."""
        positional = [*function.args.posonlyargs, *function.args.args]
        for position, parameter in [*enumerate(positional), *((None, a) for a in function.args.kwonlyargs)]:
            if parameter.annotation is not None and arrays.may_declare(parameter.annotation, *self.kinds):
                self.declared.add(keys.parameter(function, parameter))
                continue
            arguments = []
            for call in calls:
                keyword = next((k.value for k in call.keywords if k.arg == parameter.arg), None)
                hidden = any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords)
                if keyword is not None:
                    arguments.append(keyword)
                elif position is not None and not hidden and 0 <= position - bound < len(call.args):
                    arguments.append(call.args[position - bound])
            if arguments:
                self.passed.append((keys.parameter(function, parameter), arguments))

    def _fields(self, arrays: SketchArrays, cls: ast.ClassDef) -> Iterator[int]:
        """A class body's array annotations, and `__init__`'s top-level `<name>.attr = value`;
        yields the ids of the functions defined in the class's scope (methods: `self` is bound)."""
        for statement in _class_body(cls):
            if (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and arrays.may_declare(statement.annotation, *self.kinds)):
                self.declared_fields.add(statement.target.id)
            elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield id(statement)
        self.init_fields.extend(init_assignments(cls))


def init_assignments(cls: ast.ClassDef) -> Iterator[tuple[str, ast.expr]]:
    """(field, value) for each `<name>.field = value` among the own statements of the class's
    `__init__` (`Facts.init_assignments`)."""
    for init in cls.body:
        if isinstance(init, (ast.FunctionDef, ast.AsyncFunctionDef)) and init.name == "__init__":
            yield from ((target.attr, statement.value) for statement in init.body
                        if isinstance(statement, ast.Assign) for target in statement.targets
                        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name))


def _bound(target: ast.expr, path: Path = ()) -> Iterator[tuple[ast.Name, Path]]:
    """The names an assignment target binds, with their paths (`a, (b, c)`: c at (1, 1));
    a `*rest` binds no known value, an item or attribute target no name."""
    if isinstance(target, ast.Name):
        yield target, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for position, element in enumerate(target.elts):
            if not isinstance(element, ast.Starred):
                yield from _bound(element, path + (position,))


def _elements(sketch: Sketch, container: ast.expr, seen: set[str]) -> Iterator[ast.expr]:
    """What iterating `container` may give (`Facts.elements(..., iterated=True)`): the elements
    of a list, tuple or set display, a dict display's keys, a comprehension's element, and
    through a name, those of every display assigned to it anywhere in the file."""
    if isinstance(container, (ast.List, ast.Tuple, ast.Set)):
        yield from (element for element in container.elts if not isinstance(element, ast.Starred))
    elif isinstance(container, ast.Dict):
        yield from (key for key in container.keys if key is not None)
    elif isinstance(container, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        yield container.elt
    elif isinstance(container, ast.Name) and container.id not in seen:
        seen.add(container.id)
        for value in sketch.assigned(container.id):
            yield from _elements(sketch, value, seen)


def _calls_by_callee(sketch: Sketch) -> dict[str, list[ast.Call]]:
    """Calls indexed by the names of the functions they may run."""
    found: dict[str, list[ast.Call]] = {}
    for call in sketch.calls:
        for name in _callee_names(sketch, call.func, set()):
            found.setdefault(name, []).append(call)
    return found


def _callee_names(sketch: Sketch, func: ast.expr, seen: set[str]) -> set[str]:
    """Names of the functions calling `func` may run (`Facts.callee`): its own name, and the
    first argument of a function wrapper (`jax.jit(f)(x)`), also through a name assigned one
    (`g = jax.jit(f)`); an attribute (`self.f`) or another call (`partial(f, 1)`) reaches none."""
    if isinstance(func, ast.Starred):
        return _callee_names(sketch, func.value, seen)
    if isinstance(func, ast.Call):
        wraps = func.args and not sketch.qualnames(func.func).isdisjoint(function_wrappers())
        return _callee_names(sketch, func.args[0], seen) if wraps else set()
    if not isinstance(func, ast.Name) or func.id in seen:
        return set()
    seen.add(func.id)
    names = {func.id}
    for value in sketch.assigned(func.id):
        if isinstance(value, ast.Call):
            names |= _callee_names(sketch, value, seen)
    return names


def _returns(body: list[ast.stmt]) -> Iterator[ast.expr]:
    """The values of a function's own `return` statements (statements only are walked: a
    `return` is one; nested functions and classes have their own)."""
    for statement in body:
        if isinstance(statement, ast.Return):
            if statement.value is not None:
                yield statement.value
        elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field in _BLOCKS:
                for inner in getattr(statement, field, ()):
                    blocks = isinstance(inner, (ast.ExceptHandler, ast.match_case))
                    yield from _returns(inner.body if blocks else [inner])


def _class_body(cls: ast.ClassDef) -> Iterator[ast.stmt]:
    """Statements of a class's own scope (inside `if`/`try` too, not in its functions)."""
    stack: list[ast.AST] = list(cls.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            stack.extend(child for child in children(node) if isinstance(child, ast.stmt))


def _at_receiver(node: ast.expr) -> ast.expr:
    """`x` in `x.at[i]` (the receiver an `.at[...]` update reads)."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "at":
        return node.value.value
    return node


def at_update_statement(statement: ast.Expr) -> bool:
    """Is the expression statement an `.at[...]` update (`x.at[i].set(v)`) whose result nobody keeps?"""
    call = statement.value
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and jax_api.at_update(call.func.attr)
            and _at_receiver(call.func.value) is not call.func.value)
