"""Is a value a JAX array (immutable), rather than a NumPy array (mutable in place)?

`Facts.kind` calls both ARRAY: an annotation `np.ndarray` or `Float[np.ndarray, "n"]`
declares an array too. Rules about JAX's array semantics (no item assignment) must not
fire on NumPy arrays, so they ask here.
"""

from __future__ import annotations

import libcst as cst

from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import Binding, Site

# Annotations that admit (or name) a NumPy array.
_NUMPY_ANNOTATIONS = frozenset({"numpy.ndarray", "numpy.typing.NDArray", "numpy.typing.ArrayLike",
                                "jaxtyping.ArrayLike", "jax.typing.ArrayLike"})


def is_jax_array(facts: Facts, node: cst.BaseExpression, site: Site) -> bool:
    """Is the value of `node` known to be a JAX array, and never declared a NumPy one?"""
    if facts.kind(node, site) is not Kind.ARRAY:
        return False
    if isinstance(node, cst.Name):
        return not any(_declared_numpy(facts, binding) for binding in facts.lookup(node.value, site.scope))
    if isinstance(node, cst.Attribute):  # `self.registers` declared `np.ndarray` in the class body
        owner = facts._method_class_of_self(node.value, site.scope)
        body = facts.index.body_scope(owner) if owner is not None else None
        fields = body.bindings.get(node.attr.value, []) if body is not None else []
        return not any(_declared_numpy(facts, binding) for binding in fields)
    return True


def _declared_numpy(facts: Facts, binding: Binding) -> bool:
    annotation = binding.annotation
    if annotation is None:
        return False
    where = binding.scope.parent if binding.kind == "param" and binding.scope.parent else binding.scope
    names = [annotation]
    if isinstance(annotation, cst.Subscript):  # Float[np.ndarray, "n"]: the array type is inside
        names = [annotation.value] + [element.slice.value for element in annotation.slice
                                      if isinstance(element.slice, cst.Index)]
    return any(facts.qualname(name, where) in _NUMPY_ANNOTATIONS for name in names)
