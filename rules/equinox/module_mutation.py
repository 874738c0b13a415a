"""ODL604: assigning to an Equinox module's attribute outside `__init__`, or to an undeclared field in it."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    DefinedAs,
    Needs,
    Site,
    declared_fields,
    enclosing_class,
    initialising_methods,
    is_module_class,
    jax_api,
)
from odelint.api.finding import Edits, Replace, Safety
from odelint.api.rule import Flag, Pass, Rule

_TREE_AT = jax_api.name("eqx_tree_at")
# Methods in which Equinox lets a module assign its own fields.


class ModuleMutation(Rule):
    """An Equinox module is mutated, or `__init__` sets a field the class does not declare.

    ## What it does
    Flags (a) `model.field = value` (and `+=`) where `model` is an Equinox module,
    including `self.field = value` in a module's methods other than `__init__` and
    `__post_init__` (and the helper methods that only they call, such as a
    `self._make_layer(...)` that `__init__` calls: the module is still being initialised);
    (b) `self.name = value` in the `__init__` of a module class of this file when `name` is
    not declared in the class body (nor in its module bases).

    ## Why is this bad?
    Equinox modules are frozen dataclasses. Both assignments raise at run time:

        dataclasses.FrozenInstanceError: cannot assign to field 'weight'

    For (b) the field is not a dataclass field, so Equinox refuses it even inside
    `__init__` (equinox#37, #1066, #788; pymdp#247; haliax#3; levanter#108; tinygp#204).

    ## Example
    ```python
    model = eqx.nn.Linear(2, 1, key=key)
    model.weight = jnp.zeros((1, 2))
    ```

    ## Use instead
    ```python
    model = eqx.tree_at(lambda t: t.weight, model, jnp.zeros((1, 2)))
    ```
    and for (b) declare the field in the class body (`scale: float`).

    ## Fix safety
    (a) For a plain name assigned in the same scope, at statement level, the rule
    rewrites to `eqx.tree_at`. Unsafe: `tree_at` builds a new module, so any other
    reference to the old module (a list, a closure, the caller's variable) keeps the old
    value, where the assignment meant to change it for everyone. No fix for `self`,
    parameters, augmented assignments or (b): the field's type is the author's choice.
    """

    code = "ODL604"
    name = "module-mutation"
    summary = "An Equinox module's attribute is assigned outside __init__, or __init__ sets an undeclared field"
    # the libraries whose classes are Equinox modules (lint/analysis/data/library_modules.toml)
    # ("jax",): the module may be a class of another project file, with no library named here
    triggers = (("equinox",), ("diffrax",), ("lineax",), ("optimistix",), ("jax",))
    fix_safety = Safety.UNSAFE
    fixtures = "tests/fixtures/ODL604"

    needs = Needs.fact("module_field_assigned")

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        if len(node.targets) == 1:
            self._check(node, node.targets[0].target, site)

    def visit_AugAssign(self, node: cst.AugAssign, site: Site) -> None:
        self._check(node, node.target, site)

    def _check(self, node: cst.Assign | cst.AugAssign, target: cst.BaseExpression, site: Site) -> None:
        if type(target) is not cst.Attribute or type(target.value) is not cst.Name:  # exact: every assignment
            return
        owner, field = target.value, target.attr.value
        cls = enclosing_class(site.scope)
        method = self.facts.body_at(site)
        if (cls is not None and isinstance(method, cst.FunctionDef)
                and method.name.value in initialising_methods(self.facts, cls) and self._is_self(owner, site)):
            if method.name.value == "__init__" and isinstance(node, cst.Assign):
                self._check_declared(node, cls, field)
            return
        if not self.facts.is_module(owner, site):
            return
        fix = self._fix(node, owner, field, site) if isinstance(node, cst.Assign) else None
        self.report(
            node,
            f"`{owner.value}.{field}` is assigned, but `{owner.value}` is an Equinox module and modules are frozen: "
            f"this raises `FrozenInstanceError: cannot assign to field '{field}'`; "
            f"build a new module with `eqx.tree_at(lambda t: t.{field}, {owner.value}, ...)`",
            fix=fix,
        )

    def _is_self(self, owner: cst.Name, site: Site) -> bool:
        found = self.facts.definition(owner, site)
        return found is not None and found.what is DefinedAs.PARAMETER and found.position == 0

    def _check_declared(self, node: cst.Assign, cls: cst.ClassDef, field: str) -> None:
        if not is_module_class(self.facts, cls):
            return
        declared = declared_fields(self.facts, cls)
        if declared is None or field in declared:
            return
        self.report(
            node,
            f"`{cls.name.value}.__init__` sets `self.{field}`, which the class does not declare as a field: "
            f"this raises `FrozenInstanceError: cannot assign to field '{field}'`; declare `{field}: <type>` "
            "in the class body",
        )

    def _fix(self, node: cst.Assign, owner: cst.Name, field: str, site: Site):
        body = self.facts.body_at(site)
        definitions = self.facts.definitions(owner, site)
        if isinstance(body, cst.ClassDef) or not definitions or not all(
                self.facts.body_at(d.site) is body and d.what is DefinedAs.ASSIGNMENT for d in definitions):
            return None
        return self.fix("Rebuild the module with `eqx.tree_at`", lambda: self._tree_at(node, owner, field, site),
                        safe=False)

    def _tree_at(self, node: cst.Assign, owner: cst.Name, field: str, site: Site) -> Edits:
        tree_at, imports = self.facts.reference(_TREE_AT, site)
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        where = cst.Lambda(cst.Parameters([cst.Param(cst.Name("t"))]), cst.Attribute(cst.Name("t"), cst.Name(field)))
        call = cst.Call(tree_at, [cst.Arg(where, comma=comma), cst.Arg(cst.Name(owner.value), comma=comma),
                                  cst.Arg(node.value)])
        return Edits([Replace(node, node.with_changes(targets=[cst.AssignTarget(cst.Name(owner.value))], value=call))],
                     imports)

    examples = (
        Flag("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
            model.weight = jnp.zeros((1, 2))
        """, fixed="""
            import equinox as eqx
            import jax
            import jax.numpy as jnp

            model = eqx.nn.Linear(2, 1, key=jax.random.PRNGKey(0))
            model = eqx.tree_at(lambda t: t.weight, model, jnp.zeros((1, 2)))
        """, unsafe=True, message="`model.weight` is assigned", span="6:1-6:33"),
        # `self` in a method, a parameter, `+=`: reported without a fix; an undeclared field
        Flag("""
            import equinox as eq
            import jax

            from typing import Generic, TypeVar

            T = TypeVar("T")

            class Counter(eq.Module, Generic[T]):
                count: jax.Array

                def __init__(self, count):
                    self.count = count
                    self.step = 1

                def __call__(self, x):
                    self.count = self.count + 1
                    return x

            def reset(c: Counter):
                c.count = 0

            def bump(c: Counter):
                c.count += 1
        """, count=4, message="`Counter.__init__` sets `self.step`",
            span=("13:9-13:22", "16:9-16:36", "20:5-20:16", "23:5-23:17")),
        # a function of this file: `from equinox import tree_at` is reused
        Flag("""
            from equinox import tree_at
            from equinox.nn import MLP

            def build(key):
                net = MLP(2, 1, 8, 2, key=key)
                net.activation = abs
                return net
        """, fixed="""
            from equinox import tree_at
            from equinox.nn import MLP

            def build(key):
                net = MLP(2, 1, 8, 2, key=key)
                net = tree_at(lambda t: t.activation, net, abs)
                return net
        """, unsafe=True, span="6:5-6:25"),
        # declared fields set in __init__/__post_init__ (also a base's, or through a first parameter not
        # named `self`), tree_at, a class that is not a module
        Pass("""
            import equinox as eqx
            import jax
            import jax.numpy as jnp
            from elsewhere import Unknown

            class Base(eqx.Module):
                w: jax.Array

            class Model(Base):
                scale: float
                offset: float = eqx.field(init=False)

                def __init__(self, w, scale):
                    self.w = w
                    self.scale = scale
                    self.offset = 0.0

            class Checked(eqx.Module):
                a: float
                b: float = eqx.field(init=False)

                def __post_init__(self):
                    self.b = 2 * self.a

            class Mixed(eqx.Module, Unknown):
                def __init__(self):
                    self.declared_in_unknown = 1

            class Renamed(eqx.Module):
                w: float

                def __init__(this, w):
                    this.w = w

            class Plain:
                def __init__(self):
                    self.value = 1

                def update(self):
                    self.value = 2
                    object.__setattr__(self, "value", 3)

            model = Model(jnp.ones(2), 1.0)
            model = eqx.tree_at(lambda t: t.scale, model, 2.0)
            plain = Plain()
            plain.value = 4
        """),
        # a helper method that only __init__ calls sets fields while the module is being built (eqxvision's ResNet)
        Pass("""
            import equinox as eqx
            import jax.random as jr

            class ResNet(eqx.Module):
                inplanes: int
                dilation: int
                layers: list

                def __init__(self, blocks, key):
                    self.inplanes = 64
                    self.dilation = 1
                    keys = jr.split(key, len(blocks))
                    self.layers = [self._make_layer(planes, k) for planes, k in zip(blocks, keys)]

                def _make_layer(self, planes, key):
                    layer = eqx.nn.Linear(self.inplanes, planes, key=key)
                    self.inplanes = planes
                    self.dilation *= 2
                    return layer
        """),
        # the same helper also called after construction: that call mutates a frozen module
        Flag("""
            import equinox as eqx

            class Net(eqx.Module):
                width: int

                def __init__(self):
                    self._resize(8)

                def _resize(self, width):
                    self.width = width

                def grow(self):
                    self._resize(self.width * 2)
        """, message="`self.width` is assigned", span="10:9-10:27"),
    )

