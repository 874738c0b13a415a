"""Which code of a file may run under *reverse-mode* differentiation.

`facts.differentiated_by` answers for any mode; some failures need reverse mode only
(`lax.while_loop` has a JVP rule but no transpose, so `jax.jvp`/`jacfwd` through it work
while `grad`/`vjp`/`jacrev` fail). Roots are functions handed to or decorated by a transform
whose table row says it differentiates in reverse mode (lint/analysis/data/jax_api.toml), through
`functools.partial` and wrappers such as `jax.jit(jax.grad(f))`; `Reach` adds what they call.
"""

from __future__ import annotations

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import argument_at, positional_args, text_of
from odelint.analysis.facts import Facts
from odelint.analysis.reach import Reach, function_name
from odelint.analysis.scopes import FUNCTION, Scope, Site

# Functions with their own derivative rule: JAX differentiates them with the rule, never
# through their body, so reverse mode does not reach into it (nor into what it calls).
CUSTOM_DERIVATIVES = frozenset({"jax.custom_vjp", "jax.custom_jvp", "equinox.filter_custom_vjp",
                                "equinox.filter_custom_jvp"})


class ReverseMode(Reach):
    def __init__(self, facts: Facts) -> None:
        super().__init__(facts, never_into=jax_api.callbacks())
        for call, site in facts.calls_to(jax_api.reverse_transforms()):
            transform = self._reverse(call.func, site.scope)
            target = argument_at(call, "fun", 0) if transform else None
            resolved = self.function(target.value, site.scope) if target is not None else None
            if resolved is not None and not self._custom(resolved[0]):
                self._root(resolved[0], call.func)
        for scope in list(facts.index.body_scopes.values()):
            if scope.kind == FUNCTION:
                for decorator in scope.node.decorators:  # type: ignore[attr-defined]
                    spelled = self._decorator(*facts.decorator_value(decorator.decorator, scope.parent or scope))
                    if spelled is not None:
                        self._root(scope.node, spelled)
        self.spread()

    def _targets(self, call: cst.Call, site: Site) -> list:
        return [target for target in super()._targets(call, site) if not self._custom(target)]

    def _custom(self, function) -> bool:
        scope = self.facts.index.body_scope(function)
        outer = scope.parent if scope is not None and scope.parent is not None else self.facts.index.module_scope
        for decorator in getattr(function, "decorators", ()):
            node = decorator.decorator
            if self.facts.qualname(node.func if isinstance(node, cst.Call) else node, outer) in CUSTOM_DERIVATIVES:
                return True
        return False

    def _reverse(self, node: cst.BaseExpression, scope: Scope) -> bool:
        found = jax_api.transform(self.facts.qualname(node, scope))
        return found is not None and found.reverse

    def _decorator(self, node: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
        """The reverse-mode transform a decorator applies (`@jax.grad`, `@eqx.filter_grad(...)`,
        `@partial(jax.grad, argnums=1)`), else None."""
        if isinstance(node, cst.Call):
            if self.facts.qualname(node.func, scope) == "functools.partial":
                args = positional_args(node, before_star=True)
                return args[0].value if args and self._reverse(args[0].value, scope) else None
            node = node.func
        return node if self._reverse(node, scope) else None

    def _root(self, function, spelled: cst.BaseExpression) -> None:
        spelling = text_of(spelled)
        self.add_root(function, f"{function_name(function)} is differentiated in reverse mode by `{spelling}`")


def reverse_differentiated_by(facts: Facts, site: Site) -> str | None:
    """Why the code at `site` may run under reverse-mode differentiation, else None."""
    return facts.part(ReverseMode, ReverseMode).why(site)
