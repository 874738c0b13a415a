"""Which values of a sketched file the model could find to be JAX arrays (`Kind.ARRAY`).

An over-approximation of `Facts.kind` for the pre-checks: a name is only an array if some
assignment gives it a value that may be one, if an annotation from the JAX stack declares it,
or if it is a parameter of a function the file calls by name (the model reads those call
sites); an attribute only if some `x.attr = ...` may assign one or a field annotation declares
it. Literals and the results of other libraries' calls (`np.zeros(3)`, `dict()`) are not.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch

_BUILTIN_PLAIN = frozenset({"dict", "list", "set", "frozenset", "tuple", "bytearray", "str", "int", "float", "bool",
                            "len", "id", "type", "repr", "hash", "sorted", "range", "object", "getattr"})
# Packages whose calls may return JAX arrays (or things the model cannot see through).
_ARRAY_PACKAGES = frozenset({"jax", "jaxlib", "equinox", "diffrax", "lineax", "optimistix", "optax", "jaxtyping",
                             "functools"})


class SketchArrays:
    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._bindings: _ArrayBindings | None = None

    def may_be_array(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Subscript):
            return self.may_be_array(node.value)
        if isinstance(node, ast.Attribute):
            return (node.attr in ("T", "mT", "real", "imag") or node.attr in self._arrays().annotated
                    or any(not self.plainly_not_array(value) for value in self._arrays().fields.get(node.attr, ())))
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            return any(self.may_be_array(side) for side in ast.iter_child_nodes(node) if isinstance(side, ast.expr))
        if isinstance(node, (ast.Call, ast.Constant, ast.JoinedStr, ast.Tuple, ast.Dict, ast.Set, ast.DictComp,
                             ast.ListComp, ast.SetComp, ast.Lambda)):
            return not self.plainly_not_array(node)
        if not isinstance(node, ast.Name):
            return True
        arrays = self._arrays()
        return (node.id in arrays.annotated or node.id in arrays.parameters
                or any(not self.plainly_not_array(value) for value in self.sketch.assigned(node.id)))

    def may_declare_array(self, annotation: ast.expr) -> bool:
        for node in ast.walk(annotation):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and any(
                    name.split(".")[0] in _ARRAY_PACKAGES for name in self.sketch.qualnames(node)):
                return True
        return False

    def plainly_not_array(self, value: ast.expr) -> bool:
        """A value that is no JAX array whatever the names in it hold."""
        if isinstance(value, (ast.Tuple, ast.List)):  # `a, b = jnp.zeros(3), 0` unpacks
            return all(self.plainly_not_array(element) for element in value.elts)
        if isinstance(value, (ast.Dict, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp, ast.Constant,
                              ast.JoinedStr, ast.Lambda)):
            return True
        if not isinstance(value, ast.Call):
            return False
        func = value.func
        if isinstance(func, ast.Name) and func.id in _BUILTIN_PLAIN and not self.sketch.binds(func.id):
            return True
        names = self.sketch.qualnames(func)
        return bool(names) and not any(name.split(".")[0] in _ARRAY_PACKAGES for name in names)

    def _arrays(self) -> _ArrayBindings:
        if self._bindings is None:
            self._bindings = _ArrayBindings(self)
        return self._bindings


class _ArrayBindings:
    """Where the model may find an array kind: annotated names (parameters and fields too),
    parameters of functions the file calls by name (`Facts` reads their call sites), and the
    values assigned to each attribute name (`self.x = ...`)."""

    def __init__(self, arrays: SketchArrays) -> None:
        sketch = arrays.sketch
        self.annotated = {node.target.id for node in sketch.of_type(ast.AnnAssign)  # type: ignore[attr-defined]
                          if isinstance(node.target, ast.Name) and arrays.may_declare_array(node.annotation)}  # type: ignore[attr-defined]
        methods = {id(f) for classes in sketch.classes.values() for cls in classes for f in cls.body}
        self.parameters: set[str] = set()
        for functions in sketch.defs.values():
            for function in functions:
                arguments = function.args
                every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                         *(a for a in (arguments.vararg, arguments.kwarg) if a is not None)]
                self.annotated.update(a.arg for a in every
                                      if a.annotation is not None and arrays.may_declare_array(a.annotation))
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
                        if isinstance(node, ast.AnnAssign) and arrays.may_declare_array(node.annotation):  # type: ignore[attr-defined]
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
