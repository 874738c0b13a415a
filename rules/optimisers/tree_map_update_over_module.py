"""ODL205: a hand-written `tree_map` update mixing a full Equinox module with a filtered tree."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import (
    InvalidLeaf,
    Kind,
    Needs,
    Site,
    dotted_name,
    filtered_source,
    jax_api,
    keyword_arg,
    loaded_names,
    module_with_invalid_leaf,
    positional_args,
    source_of,
)
from odelint.api.rule import Callees, Flag, Pass, Rule


class TreeMapUpdateOverModule(Rule):
    """A hand-written `tree_map` update mixes a full Equinox module with a filtered tree.

    ## What it does
    Flags `jax.tree_util.tree_map` (`jax.tree.map`) updates of an Equinox module whose
    class is known to hold leaves that are not arrays (an activation function, a
    `Callable` field):
    - `model = tree_map(lambda p, g: p - lr * g, eqx.filter(model, ...), grads)`: the
      filtered tree replaces the model;
    - `tree_map(lambda p, g: p - lr * g, model, grads)` where `grads` comes from
      `eqx.filter_grad`/`filter_value_and_grad` or `eqx.filter`, so it holds `None` where
      the module holds no arrays (a lambda that tests for `None`, or an `is_leaf`, is
      not flagged);
    - `tree_map(f, grads, model)`: the filtered tree first, the full module after it.

    ## Why is this bad?
    A filtered tree has `None` where the module holds functions. Used as the new model,
    its activation is `None` and calling it raises
    `TypeError: 'NoneType' object is not callable` (with Equinox before 0.10 the network
    silently became linear: equinox#107). Mapped together with the full module, the
    lambda gets the activation function and `None`:
    `TypeError: unsupported operand type(s) for *: 'float' and 'NoneType'`; with the
    filtered tree first, `ValueError: pytree structure error: different types at key
    path` (reproduced on jax 0.10.2, equinox 0.13.8; equinox#896, #892,
    google-deepmind/optax#1093, shared pitfall P03).

    ## Example
    ```python
    grads = eqx.filter_grad(loss)(model, x, y)
    model = jax.tree_util.tree_map(lambda p, g: p - lr * g, model, grads)
    ```

    ## Use instead
    ```python
    grads = eqx.filter_grad(loss)(model, x, y)
    updates = jax.tree_util.tree_map(lambda g: -lr * g, grads)
    model = eqx.apply_updates(model, updates)
    ```

    ## Fix safety
    No fix: the update has to be split into a map over the gradients and
    `eqx.apply_updates`, which skips the `None` leaves.
    """

    code = "ODL205"
    name = "tree-map-update-over-module"
    summary = "A hand-written tree_map update mixes a full Equinox module with a filtered tree"
    triggers = (("equinox", "tree"),)
    fixtures = "tests/fixtures/ODL205"

    # every report pairs the module with a filtered tree, which only these calls of the file make;
    # the module, with a function or string leaf, is a tree mapped or the one a tree was filtered from
    needs = (Needs.may_hold_modules() & Needs.calls_to(*jax_api.tree_maps()) & Needs.fact("tree_map_update")
             & Needs.refers_to(*jax_api.filtered_tree_makers())
             & Needs.calls_given_invalid_module(*jax_api.tree_maps(), *jax_api.filtered_tree_makers()))

    @classmethod
    def callees(cls) -> Callees:
        return Callees(names=frozenset(jax_api.tree_maps()))

    def visit_Assign(self, node: cst.Assign, site: Site) -> None:
        trees = self._mapped_trees(node.value, site)
        if not trees or len(node.targets) != 1:
            return
        source = filtered_source(self.facts, trees[0], site)
        target = dotted_name(node.targets[0].target)
        if source is None or target is None or dotted_name(source) != target:
            return
        found = module_with_invalid_leaf(self.facts, source, site)
        if found is not None:
            self.report(node.value, f"`{target}` is replaced by a tree map over its filtered tree "
                                    f"`{source_of(self.context.module, trees[0])}`, which is `None` where the module "
                                    f"held {_leaf(found, target)}: calling the new `{target}` raises `TypeError: "
                                    f"'NoneType' object is not callable`; map over the gradients and use "
                                    f"`eqx.apply_updates({target}, updates)`")

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        trees = self._mapped_trees(node, site)
        if len(trees) < 2:
            return
        first = module_with_invalid_leaf(self.facts, trees[0], site) if self.facts.is_module(trees[0], site) else None
        filtered = [tree for tree in trees[1:] if self.facts.kind(tree, site) is Kind.FILTERED]
        module = self.context.module
        if first is not None and filtered and self._arithmetic_without_none(node):
            text = source_of(module, first.module)
            self.report(node, f"this tree map pairs the full module `{text}` with the filtered tree "
                              f"`{source_of(module, filtered[0])}`, which is `None` where `{text}` holds "
                              f"{_leaf(found=first, owner=text)}: the lambda's arithmetic on `None` raises "
                              f"`TypeError: unsupported operand type(s) ... 'NoneType'`; map over the gradients and "
                              f"use `eqx.apply_updates({text}, updates)`")
            return
        if self.facts.kind(trees[0], site) is not Kind.FILTERED:
            return
        for tree in trees[1:]:
            found = module_with_invalid_leaf(self.facts, tree, site) if self.facts.is_module(tree, site) else None
            if found is not None:
                text = source_of(module, found.module)
                self.report(node, f"this tree map takes its structure from the filtered tree "
                                  f"`{source_of(module, trees[0])}`, which is `None` where the full module `{text}` "
                                  f"holds {_leaf(found, text)}: it raises `ValueError: pytree structure error`; map "
                                  f"over the gradients and use `eqx.apply_updates({text}, updates)`")
                return

    def _mapped_trees(self, node: cst.BaseExpression, site: Site) -> list[cst.BaseExpression]:
        """The trees of a `tree_map` call without `is_leaf` (which may be handling the `None`s)."""
        if not isinstance(node, cst.Call) or not jax_api.tree_map(self.facts.qualname(node.func, site.scope)):
            return []
        args = positional_args(node)
        if args is None or len(args) < 2 or keyword_arg(node, "is_leaf") is not None:
            return []
        return [arg.value for arg in args[1:]]

    def _arithmetic_without_none(self, node: cst.Call) -> bool:
        """Is the mapped function a lambda computing arithmetic that never tests for `None`?"""
        function = node.args[0].value
        return (isinstance(function, cst.Lambda) and isinstance(function.body, cst.BinaryOperation)
                and not any(name.value == "None" for name in loaded_names(function.body, into_nested=True)))

    examples = (
        Flag("""
            import equinox as eqx
            import jax

            def step(model: eqx.nn.MLP, x, y, lr):
                grads = eqx.filter_grad(loss)(model, x, y)
                return jax.tree_util.tree_map(lambda p, g: p - lr * g, model, grads)
        """, message="this tree map pairs the full module `model` with the filtered tree `grads`", span="6:12-6:73"),
        # the filtered tree replaces the model; the filtered tree first; `jax.tree.map`
        Flag("""
            import equinox as eqx
            import jax

            def step(model: eqx.nn.MLP, x, y, lr):
                loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, y)
                params = eqx.filter(model, eqx.is_array)
                model = jax.tree.map(lambda p, g: p - lr * g, params, grads)
                return model

            def sgd(net: eqx.nn.MLP, x, y, lr):
                grads = eqx.filter_grad(loss_fn)(net, x, y)
                return jax.tree.map(lambda g, p: p - lr * g, grads, net)
        """, count=2, message="`model` is replaced by a tree map over its filtered tree `params`",
            span=("7:13-7:65", "12:12-12:61")),
        # eqx.apply_updates, a lambda testing None, is_leaf, filtered trees only, array-only modules
        Pass("""
            import equinox as eqx
            import jax

            def step(model: eqx.nn.MLP, lin: eqx.nn.Linear, x, y, lr):
                grads = eqx.filter_grad(loss)(model, x, y)
                updates = jax.tree_util.tree_map(lambda g: -lr * g, grads)
                model = eqx.apply_updates(model, updates)
                jax.tree_util.tree_map(lambda p, g: p if g is None else p - lr * g, model, grads)
                jax.tree_util.tree_map(lambda p, g: p - lr * g, model, grads, is_leaf=lambda v: v is None)
                params = eqx.filter(model, eqx.is_array)
                params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
                lin_grads = eqx.filter_grad(loss)(lin, x, y)
                lin = jax.tree_util.tree_map(lambda p, g: p - lr * g, lin, lin_grads)
                return eqx.combine(params, model), lin
        """),
    )


def _leaf(found: InvalidLeaf, owner: str) -> str:
    """`` `model.activation` (a function)``: the first leaf that is not an array."""
    held = f", {found.leaf.detail}" if found.leaf.detail else ""
    return f"`{owner}.{found.leaf.path}` ({found.leaf.kind.value}{held})"
