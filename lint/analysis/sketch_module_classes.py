"""Which values of a sketched file may be Equinox modules with a function or string leaf.

`jax.jit`, `jax.grad`, `lax` control flow and a tree map beside a filtered tree crash on such a
module (ODL601, ODL402, ODL205). The model finds a value's class (`Facts.module_class`,
`Facts.module_received`) and that class's leaves (odelint.analysis.leaves); the Sketch follows
the same roots on `ast`, erring towards "maybe":

- a type expression may name a class with such a leaf (`class_kinds`): a library's, from
  lint/analysis/data (`equinox.nn.MLP`'s `activation`), a container of layers, a class of this
  file (read as `Leaves` reads it: its bases, its fields' annotations, what `__init__`
  assigns, a parameter of it followed to the calls building the class), or a class of another
  project file. That last one is read the same way on the other file's Sketch where that
  settles it (no class or import there binds the name; a class that is no module, or surely
  one with array and number leaves only; a name it imports from another file, read there in
  turn). Otherwise it is asked of the other file's own model, which the rule would ask too,
  built once per run; a fault of that model leaves the answer "maybe". Dynamiqs' solvers name
  `QArray`, `Method`, `SolveSaved` and `TimeQArray` (read on `ast`) and `Options` (whose
  `__init__` assigns what only the model can type: `Partial(f) if f is not None else None`).
- a value may be an instance of one (`may_carry`) through what `Facts.module_class` follows:
  a call of such a class, of a function of this file that returns one, of
  `eqx.apply_updates`/`eqx.tree_at` given one; a name through every binding of it in the file
  (assignments, loop targets, annotations, and parameters by their annotation, else by the
  arguments of the calls of their function); an attribute through the values assigned to an
  attribute of that name and the annotations of class fields of that name; an item or
  element of a container.
- a transform applied to a function of this file may get one (`transform_may_get`): for a
  parameter it may consume (every one but those literal static options name), the class the
  annotation names (the model takes it when it is a module class) or else what the calls of
  the transformed function may pass.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Hashable, Iterable, Iterator
from typing import TYPE_CHECKING, cast

from odelint.analysis import jax_api, project
from odelint.analysis.sketch import Sketch, walk
from odelint.analysis.sketch_calls import functions_and_lambdas, may_be_module_class, parameters, positional_names
from odelint.analysis.sketch_reach import given_at, node_bindings, scope_of, static_options_of

if TYPE_CHECKING:
    from odelint.analysis.sketch import FunctionNode

INVALID = "a module class that may have a function or string leaf"
CLEAN = "a module class whose leaves are arrays or numbers"
NONE = "no module class the model knows"

_Item = ast.AST | tuple[Hashable, ...]
_PARAMETERS_FOLLOWED = 50  # `__init__` parameters followed to the calls building their class, at most


class SketchModuleClasses:
    def __init__(self, sketch: Sketch, elsewhere: dict[str, SketchModuleClasses] | None = None) -> None:
        self.sketch = sketch
        self._qualname_kinds: dict[str, str] = {}
        self._own_kinds: dict[int, str] = {}
        self._carriers: set[Hashable] = set()     # items known to reach a class with such a leaf
        self._rebound: dict[int, set[str]] = {}  # by `__init__`: the names its body binds
        self._building: dict[str, list[ast.Call] | None] = {}  # by class name: `_building_calls`
        self._not_carriers: set[Hashable] = set()  # items known not to
        # other files' readings by path, made for the linted file's gate: one for each file, shared
        # with the readings made from there (files that import each other end in the guards).
        # Each is made afresh for a gate, so that what it reads further is noted for this file.
        self._owns_elsewhere = elsewhere is None
        self._elsewhere: dict[str, SketchModuleClasses] = {} if elsewhere is None else elsewhere

    # -- classes --------------------------------------------------------------------------------

    def class_kinds(self, node: ast.expr) -> frozenset[str]:
        """What the type expression `node` may name (`Facts.module_type`): INVALID, CLEAN, NONE."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return frozenset({NONE})
        found = {self._qualname_kind(name) for name in self.sketch.qualnames(node)}
        if isinstance(node, ast.Name):
            found.update(self._own_class_kind(cls) for cls in self.sketch.classes.get(node.id, ()))
        return frozenset(found) or frozenset({NONE})

    def _own_class_kind(self, cls: ast.ClassDef) -> str:
        kind = self._own_kinds.get(id(cls))
        if kind is None:
            self._own_kinds[id(cls)] = INVALID  # a class among its own bases or fields: say "maybe"
            kind = self._own_kinds[id(cls)] = self._read_own_class(cls)
        return kind

    def _read_own_class(self, cls: ast.ClassDef) -> str:
        """A class of this file, read as `Leaves._own` reads it (no module where no base is one):
        its bases' fields, its fields' annotations (a `Callable` or `str` one, or a class with
        such a leaf), and what its `__init__` assigns to `self` (anything but a number,
        arithmetic or a parameter declared an array, key or number, unless the field is
        declared an array or key)."""
        if not may_be_module_class(self.sketch, cls):
            return NONE
        bases = frozenset().union(*(self.class_kinds(base) for base in cls.bases))
        if INVALID in bases:
            return INVALID
        if CLEAN not in bases:
            return NONE  # no base is a module (another file's plain class): neither is the class
        settled: set[str] = set()  # fields whose annotation decides them whatever `__init__` assigns
        for item in cls.body:
            if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)):
                continue
            declared = self._field_declares(item.annotation)
            if _static_field(self.sketch, item.value):  # no leaf; `__init__` counts unless the kind is known
                if declared in ("function", "array", "number"):
                    settled.add(item.target.id)
            elif declared == "function":
                return INVALID
            elif declared == "array":
                settled.add(item.target.id)
        init = next((item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
        if init is None:
            return CLEAN
        for node in walk(init):
            if isinstance(node, ast.Assign) and any(
                    isinstance(target, ast.Attribute) and target.attr not in settled for target in node.targets):
                if not self._plain_value(node.value, init):
                    return INVALID
        return CLEAN

    def _field_declares(self, annotation: ast.expr) -> str:
        """What a field's annotation declares (`Facts.annotation_kind`, its outer name): "function"
        (a `Callable`, a `str`, or a module class with such a leaf), "array" (or a key),
        "number", "module", or "unknown"."""
        outer = _outer(annotation)
        kinds = {jax_api.annotation_kind(name) for name in self.sketch.qualnames(outer)}
        classes = self.class_kinds(outer)
        if "callable" in kinds or INVALID in classes or (isinstance(outer, ast.Name) and outer.id == "str"):
            return "function"
        if CLEAN in classes:
            return "module"
        if kinds & {"array", "key"}:
            return "array"
        return "number" if isinstance(outer, ast.Name) and outer.id in ("float", "int", "bool") else "unknown"

    def _plain_value(self, value: ast.expr, init: ast.FunctionDef) -> bool:
        """A value assigned in `__init__` that gives no function or string leaf: a number or
        `None`, arithmetic, or a parameter of `__init__` that gives none (`_plain_parameter`)."""
        if isinstance(value, ast.Constant):
            return not isinstance(value.value, str)
        if isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp)):
            return True
        return isinstance(value, ast.Name) and self._plain_parameter(init, value.id)

    def _plain_parameter(self, init: ast.FunctionDef, name: str) -> bool:
        """Does the model find no function in the parameter `name` of an `__init__`? None where its
        annotation declares an array, key or number. Where it declares nothing the model reads
        (`float | None`, or no annotation), the model takes the kind the calls building the class
        agree on (`Facts._param_kind`): then where every value those calls may pass is a number,
        arithmetic, or in turn such a parameter of the `__init__` making the call
        (`super().__init__(tstart=tstart)`), followed as far as it goes (a parameter met again
        adds no value). `self`, a parameter bound again in the body (the model reads a name by its
        last binding), and one whose default is anything else, may be anything."""
        pending = [(init, name)]
        met = {(id(init), name)}
        while pending:
            function, parameter = pending.pop()
            arg = next((arg for arg in parameters(function)[1:] if arg.arg == parameter), None)
            default = _default_of(function, parameter)
            if arg is None or parameter in self._bound_in(function) or not (
                    default is None or _plain_argument(default)):
                return False
            declared = self._field_declares(arg.annotation) if arg.annotation is not None else "unknown"
            if declared != "unknown":
                if declared in ("array", "number"):
                    continue
                return False
            calls = self._building_calls(cast(ast.ClassDef, self.sketch.parent(function)))
            if calls is None:
                return False
            for value in _given(calls, function, parameter, 1):
                passed = self._passed_parameter(cast(ast.expr, value))
                if passed is None:
                    if not _plain_argument(cast(ast.expr, value)):
                        return False
                elif (id(passed[0]), passed[1]) not in met:
                    if len(met) >= _PARAMETERS_FOLLOWED:
                        return False
                    met.add((id(passed[0]), passed[1]))
                    pending.append(passed)
        return True

    def _passed_parameter(self, value: ast.expr) -> tuple[ast.FunctionDef, str] | None:
        """The `__init__` and its parameter a name passed by a call inside that `__init__` reads."""
        if not isinstance(value, ast.Name):
            return None
        around = scope_of(self.sketch, value)
        if isinstance(around, ast.FunctionDef) and around.name == "__init__" and isinstance(
                self.sketch.parent(around), ast.ClassDef):
            return around, value.id
        return None

    def _bound_in(self, function: ast.FunctionDef) -> set[str]:
        found = self._rebound.get(id(function))
        if found is None:
            found = self._rebound[id(function)] = _rebound(self.sketch, function)
        return found

    def _building_calls(self, owner: ast.ClassDef) -> list[ast.Call] | None:
        """The calls that may pass arguments to the `__init__` of a class: those of a name or
        attribute named like the class, and every call of an `__init__` attribute (the model's
        `Facts.arguments_of` follows `super().__init__(...)` in its subclasses' `__init__`). None
        where `__init__` is named anywhere else (`init = Base.__init__`): the Sketch says "maybe"."""
        if owner.name in self._building:
            return self._building[owner.name]
        sketch = self.sketch
        calls: list[ast.Call] | None = [
            call for call in sketch.calls if isinstance(call.func, (ast.Name, ast.Attribute))
            and _last_name(call.func) in (owner.name, "__init__")]
        if any(node.id == "__init__" for node in sketch.of_type(ast.Name)) or any(
                node.attr == "__init__" and not _called(sketch, node) for node in sketch.of_type(ast.Attribute)):
            calls = None
        self._building[owner.name] = calls
        return calls

    def _qualname_kind(self, qualname: str) -> str:
        kind = self._qualname_kinds.get(qualname)
        if kind is None:
            self._qualname_kinds[qualname] = INVALID  # asked again while answering (files that import each other)
            kind = self._qualname_kinds[qualname] = self._compute_qualname_kind(qualname)
        return kind

    def _compute_qualname_kind(self, qualname: str) -> str:
        if qualname == "equinox.Module":
            return CLEAN
        if qualname.startswith("equinox.nn."):
            if qualname in jax_api.names("nn_non_modules") or not qualname.rsplit(".", 1)[1][:1].isupper():
                return NONE
            return _library_kind(qualname)
        if jax_api.is_library_module(qualname):
            return _library_kind(qualname)
        if self.sketch.path is None or "." not in qualname.lstrip("."):
            return NONE
        module, _, name = qualname.rpartition(".")
        try:
            where = self._project_file(module)
            if where is None:
                return NONE
            read = self._read_elsewhere(where, name)
            if read is not None:
                return read
            other = project.facts_imported(cast(project.ImportsOf, self.sketch.project_imports), module, frozenset())
            found = other.exported_module_class(name) if other is not None else None
            if other is None or found is None:
                return NONE
            return INVALID if any(leaf.kind.crashes_transforms for leaf in other.non_array_leaves(found)) else CLEAN
        except Exception:  # a fault of the other file's model is the rule's to meet (it reports its crash)
            return INVALID

    def _project_file(self, module: str) -> str | None:
        """The project file `import <module>` means here (`Facts._project_facts`), None for none."""
        if module.lstrip(".").split(".")[0] in project.NEVER_PROJECT:
            return None
        return self.sketch.project_file(module)

    def _read_elsewhere(self, path: str, name: str) -> str | None:
        """What `from <that file> import name` gives (`Facts.exported_module_class`), read on the
        other file's `ast` where that settles it, as this file's own classes are read: NONE
        where no class or import there binds the name (the model looks at nothing else), one
        top-level class's kind where the Sketch is sure of it (not a module class, or surely
        one whose leaves are all arrays or numbers), and what the files it imports the name
        from say. None: the other file's model must say (a star import, a class whose leaves
        may be functions, a class whose base is another file's)."""
        outline = _outline(path)
        if outline is None or outline.star:
            return None
        classes = outline.classes.get(name, [])
        if name in outline.imported:
            return None if classes or name not in outline.imported_at_top else self._imported_elsewhere(
                path, outline, name)
        if not classes:
            return NONE
        if len(classes) > 1 or id(classes[0]) not in outline.top:
            return None
        other = self._reading_of(path, outline)
        cls = classes[0]
        if not may_be_module_class(other.sketch, cls):
            return NONE
        clean = other._own_class_kind(cls) == CLEAN and _surely_module_class(other.sketch, cls)
        return CLEAN if clean else None

    def _imported_elsewhere(self, path: str, outline: _Outline, name: str) -> str | None:
        """A name the other file imports at its top level: what the project files it may come
        from say of it, as the model follows the import (a library's class is none it follows);
        None where the answers differ or one may have a function leaf."""
        other = self._reading_of(path, outline)
        kinds = {other._qualname_kind(meaning) if other._project_file(meaning.rpartition(".")[0]) is not None else NONE
                 for meaning in other.sketch.qualnames(ast.Name(id=name, ctx=ast.Load()))}
        return kinds.pop() if len(kinds) == 1 and INVALID not in kinds else None

    def _reading_of(self, path: str, outline: _Outline) -> SketchModuleClasses:
        """This gate's reading of another file's classes, on that file's Sketch (kept with its outline)."""
        other = self._elsewhere.get(path)
        if other is None:
            other = self._elsewhere[path] = SketchModuleClasses(outline.sketch, self._elsewhere)
        return other

    def release(self) -> None:
        """Drop the readings of other files made for the linted file (they refer to each other)."""
        if self._owns_elsewhere:
            self._elsewhere.clear()
        self._elsewhere = {}

    def _annotation_kinds(self, annotation: ast.expr) -> frozenset[str]:
        """What an annotation declares (its outer name: `list` of `list[Net]`, as the model reads it)."""
        return self.class_kinds(_outer(annotation))

    # -- values ---------------------------------------------------------------------------------

    def may_carry(self, value: ast.expr) -> bool:
        """May `Facts.module_class` find `value` to be an instance of a class with a function or
        string leaf? A search through what the value may come from: every item it reaches
        without finding one is known not to, as the search from it would find the same."""
        stack: list[_Item] = [value]
        seen: set[Hashable] = set()
        while stack:
            item = stack.pop()
            key = _key(item)
            if key in seen or key in self._not_carriers:
                continue
            seen.add(key)
            source, following = self._step(item)
            if source or key in self._carriers:
                self._carriers.add(_key(value))
                return True
            stack.extend(following)
        self._not_carriers |= seen
        return False

    def _step(self, item: _Item) -> tuple[bool, Iterable[_Item]]:
        """Whether `item` is itself such an instance, and what it may come from."""
        if isinstance(item, tuple):
            if item[0] == "name":
                return self._name_step(cast(str, item[1]))
            if item[0] == "attribute":
                return self._attribute_step(cast(str, item[1]))
            if item[0] == "returns":
                return False, self._returned(cast("FunctionNode", item[1]))
            function = cast("FunctionNode", item[1])
            return False, self._passed(function, cast(str, item[2]), int(_is_method(self.sketch, function)))
        node = item
        if isinstance(node, ast.Name):
            return False, [("name", node.id)]
        if isinstance(node, ast.Call):
            return self._call_step(node)
        if isinstance(node, ast.Attribute):
            return False, [("attribute", node.attr)]
        if isinstance(node, (ast.Subscript, ast.Starred, ast.NamedExpr, ast.Await)):
            return False, [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return False, node.elts
        if isinstance(node, ast.Dict):
            return False, [*(key for key in node.keys if key is not None), *node.values]
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return False, [node.elt]
        if isinstance(node, ast.DictComp):
            return False, [node.key, node.value]
        if isinstance(node, ast.IfExp):
            return False, [node.body, node.orelse]
        return False, ()

    def _call_step(self, call: ast.Call) -> tuple[bool, list[_Item]]:
        """A class called (also `eqx.nn.make_with_state(Cls)(...)`), a kind-preserving Equinox
        function's argument, or what a function of this file returns."""
        func = call.func
        named = [func] if not isinstance(func, ast.Call) else [
            node for node in walk(func) if isinstance(node, (ast.Name, ast.Attribute))]
        if any(INVALID in self.class_kinds(cast(ast.expr, node)) for node in named):
            return True, []
        following: list[_Item] = []
        if self.sketch.qualnames(func) & jax_api.kind_preserving().keys():
            following.extend(call.args)
            following.extend(keyword.value for keyword in call.keywords)
        following.extend(("returns", function) for function in self.sketch.arrays.callees_of(func))
        return False, following

    def _name_step(self, name: str) -> tuple[bool, list[_Item]]:
        """Every binding of `name` in the file: assigned values, what loops over, annotations,
        parameters (by annotation, the `self` of a method, else the arguments of calls)."""
        sketch = self.sketch
        following: list[_Item] = list(sketch.assigned(name))
        for loop in sketch.of_type(ast.For, ast.AsyncFor, ast.comprehension):
            if any(isinstance(node, ast.Name) and node.id == name for node in walk(loop.target)):
                following.append(loop.iter)
        for node in sketch.of_type(ast.AnnAssign):
            if isinstance(node.target, ast.Name) and node.target.id == name and INVALID in self._annotation_kinds(
                    node.annotation):
                return True, []
        for function, arg, first in _parameters_named(sketch, name):
            if first and isinstance(sketch.parent(function), ast.ClassDef):
                return True, []  # `self`: the model reads the leaves of its class
            kinds = self._annotation_kinds(arg.annotation) if arg.annotation is not None else frozenset({NONE})
            if INVALID in kinds:
                return True, []
            if kinds != {CLEAN}:
                following.append(("parameter", function, name))
        return False, following

    def _attribute_step(self, attr: str) -> tuple[bool, list[_Item]]:
        """`obj.attr`: what is assigned to an attribute of that name, and the annotations of
        class fields of that name (`Facts._field_module_class`)."""
        for classes in self.sketch.classes.values():
            for cls in classes:
                for node in cls.body:
                    if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                            and node.target.id == attr and INVALID in self._annotation_kinds(node.annotation)):
                        return True, []
        return False, list(self.sketch.assigned_attribute(attr))

    def _returned(self, function: FunctionNode) -> list[_Item]:
        if isinstance(function, ast.Lambda):
            return [function.body]
        return [node.value for node in self.sketch.reach.own(function).nodes
                if isinstance(node, ast.Return) and node.value is not None]

    def _passed(self, function: FunctionNode, name: str, bound: int) -> list[_Item]:
        """What the calls of `function` (and, for an `__init__`, of its class) may pass for its
        parameter `name` (`_given`)."""
        calls = list(self.sketch.reach.calls_of(function))
        owner = self.sketch.parent(function)
        if isinstance(function, ast.FunctionDef) and function.name == "__init__" and isinstance(owner, ast.ClassDef):
            calls += [call for call in self.sketch.calls
                      if isinstance(call.func, (ast.Name, ast.Attribute)) and _last_name(call.func) == owner.name]
        return _given(calls, function, name, bound)

    # -- transforms -----------------------------------------------------------------------------

    def transform_may_get(self, transforms: frozenset[str]) -> bool:
        """May one of these transforms, applied to a function of this file (called or as a
        decorator), get such a module for a parameter it may consume?"""
        reach = self.sketch.reach
        for call in self.sketch.calls_to(transforms):
            static = static_options_of(call, self.sketch.qualnames(call.func) & transforms)
            for target in given_at(call, ("fun", "f"), 0):
                for function, bound in reach.function_targets(target):
                    if self._may_receive(function, bound, static, decorated=False):
                        return True
        for function in reach.decorated(transforms):
            if isinstance(function, ast.Lambda):
                continue
            for static in reach.decorator_options(function, transforms):
                if self._may_receive(function, 0, static, decorated=True):
                    return True
        return False

    def _may_receive(self, function: FunctionNode, bound: int, static: tuple[frozenset[str], frozenset[int]],
                     decorated: bool) -> bool:
        names, numbers = static
        arguments = function.args
        for index, arg in enumerate([*arguments.posonlyargs, *arguments.args]):
            if index < bound or arg.arg in names or index - bound in numbers:
                continue
            kinds = self._annotation_kinds(arg.annotation) if arg.annotation is not None else frozenset({NONE})
            if INVALID in kinds:
                return True
            if kinds == {CLEAN}:
                continue  # the model takes the class the annotation names
            owner = self.sketch.parent(function)
            if decorated and index == 0 and isinstance(owner, ast.ClassDef):
                if may_be_module_class(self.sketch, owner):
                    return True  # `self` of a decorated method: the leaves of its class
                continue
            if any(self.may_carry(cast(ast.expr, value)) for value in self._passed(
                    function, arg.arg, 1 if decorated and _is_method(self.sketch, function) else bound)):
                return True
        return False

    def given_to(self, names: frozenset[str]) -> bool:
        """May a call to one of these dotted names be given such a module (any argument)?"""
        return any(self.may_carry(value) for call in self.sketch.calls_to(names)
                   for value in (*call.args, *(keyword.value for keyword in call.keywords)))


def _library_kind(qualname: str, depth: int = 0) -> str:
    """A library class's kind: a container of layers holds what it is given; a row of
    lint/analysis/data names the function leaves and the modules inside (`Leaves._library`)."""
    if qualname in jax_api.names("layer_containers"):
        return INVALID
    row = jax_api.library_module(qualname)
    if row is None:
        return CLEAN
    if row.functions:
        return INVALID
    if depth < 4 and any(_library_kind(inner.rstrip("[]"), depth + 1) == INVALID for _, inner in row.modules):
        return INVALID
    return CLEAN


class _Outline:
    """What binds each name in a file, read on its Sketch (anywhere in the file: saying "maybe
    the model" too often costs a model, never a finding). The Sketch is kept for reading the
    file's classes; no analysis is ever made of it (an analysis refers back to its Sketch)."""

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self.classes = sketch.classes
        self.top: set[int] = {id(node) for node in sketch.tree.body}
        self.star = False
        self.imported: set[str] = set()
        inner: set[str] = set()  # names an import below the top level binds
        for node in sketch.of_type(ast.Import, ast.ImportFrom):
            self.star = self.star or any(alias.name == "*" for alias in node.names)
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
            self.imported.update(names)
            if id(node) not in self.top:
                inner.update(names)
        self.imported_at_top = self.imported - inner  # bound by top-level imports alone


# other project files' outlines, by path, with their stamp and size, oldest use first
_outlines: dict[str, tuple[list[int] | None, _Outline | None, int]] = project.kept_of_other_files({})


def _outline(path: str) -> _Outline | None:
    """The outline of a project file (None when it cannot be read or parsed), parsed once per
    version of the file while recently used (`project.KEPT_CHARACTERS` of them are kept)."""
    path = os.path.abspath(path)
    stamp = project.noted(path)  # the linted file's result depends on this file's contents
    known = _outlines.pop(path, None)
    if known is None or known[0] != stamp:
        try:
            text = project.read_text(path)
            known = (stamp, _Outline(Sketch(ast.parse(text), path)), len(text))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
            known = (stamp, None, 0)
    _outlines[path] = known
    while len(_outlines) > 1 and sum(entry[2] for entry in _outlines.values()) > project.KEPT_CHARACTERS:
        del _outlines[next(iter(_outlines))]
    return known[1]


def _surely_module_class(sketch: Sketch, cls: ast.ClassDef, seen: frozenset[int] = frozenset()) -> bool:
    """Does `Facts.is_module_class` surely hold: a base that only an import makes
    `equinox.Module` (`eqx.Module`), or one only classes of the file bind, each surely a module?"""
    for base in cls.bases:
        root = base
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or sketch.assigned(root.id):
            continue
        names = sketch.qualnames(base)
        if names:
            if names == {"equinox.Module"}:
                return True
            continue
        parents = sketch.classes.get(root.id, []) if root is base and id(cls) not in seen else []
        if parents and all(_surely_module_class(sketch, parent, seen | {id(cls)}) for parent in parents):
            return True
    return False


def _static_field(sketch: Sketch, value: ast.expr | None) -> bool:
    """`eqx.field(static=True)` or `eqx.static_field()`: no leaf (`leaves._is_static_field`)."""
    if not isinstance(value, ast.Call):
        return False
    names = sketch.qualnames(value.func)
    return "equinox.static_field" in names or ("equinox.field" in names and any(
        keyword.arg == "static" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in value.keywords))


def _outer(annotation: ast.expr) -> ast.expr:
    """`Float` of `Float[Array, "n"]`: the name `Facts.annotation_kind` reads."""
    return annotation.value if isinstance(annotation, ast.Subscript) else annotation


def _given(calls: Iterable[ast.Call], function: FunctionNode, name: str, bound: int) -> list[_Item]:
    """What these calls may pass for the parameter `name` of `function`, read as `argument_for`
    reads them with `bound` leading parameters already bound: by position, by keyword, or unpacked."""
    names = positional_names(function)
    position = names.index(name) - bound if name in names else -1
    found: list[_Item] = []
    for call in calls:
        found.extend(keyword.value for keyword in call.keywords if keyword.arg in (name, None))
        found.extend(arg.value for arg in call.args if isinstance(arg, ast.Starred))
        if 0 <= position < len(call.args):
            found.append(call.args[position])
    return found


def _plain_argument(value: ast.expr) -> bool:
    """A value a call passes in which the model finds no function nor string: a number or `None`,
    or arithmetic (`Facts._arithmetic_kind`: an array or a number)."""
    if isinstance(value, ast.Constant):
        return not isinstance(value.value, (str, bytes))
    return isinstance(value, (ast.BinOp, ast.UnaryOp, ast.Compare))


def _called(sketch: Sketch, node: ast.Attribute) -> bool:
    """Is the attribute the function of a call (`super().__init__(...)`)?"""
    call = sketch.parent(node)
    return isinstance(call, ast.Call) and call.func is node


def _default_of(function: FunctionNode, name: str) -> ast.expr | None:
    """The default value of a parameter (None: it has none)."""
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    pairs = [*zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults, strict=True),
             *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)]
    return next((default for arg, default in pairs if arg.arg == name), None)


def _rebound(sketch: Sketch, function: FunctionNode) -> set[str]:
    """The names bound anywhere in a function's body, nested scopes too (`node_bindings`: targets,
    imports, `except ... as`, pattern captures, definitions), and those it declares `global` or
    `nonlocal`: a parameter among them may hold something else where it is read."""
    found: set[str] = set()
    for node in walk(function):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            found.update(node.names)
        elif node is not function:
            found.update(name for name, _ in node_bindings(node, sketch.parent(node)))
    return found


def _key(item: _Item) -> Hashable:
    return item if isinstance(item, tuple) else id(item)


def _is_method(sketch: Sketch, function: FunctionNode) -> bool:
    return not isinstance(function, ast.Lambda) and isinstance(sketch.parent(function), ast.ClassDef)


def _last_name(node: ast.Name | ast.Attribute) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr


def _parameters_named(sketch: Sketch, name: str) -> Iterator[tuple[FunctionNode, ast.arg, bool]]:
    """The parameters called `name` of every function and lambda of the file, each with
    whether it is its function's first positional one."""
    for function in functions_and_lambdas(sketch):
        first = positional_names(function)[:1]
        for arg in parameters(function):
            if arg.arg == name:
                yield function, arg, [name] == first

