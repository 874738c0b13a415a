"""What ODL601 and ODL605 share: visiting every place a function transform is applied."""

from __future__ import annotations

import libcst as cst
from odelint.analysis import Application, Site, function_wrappers
from odelint.api.rule import Callees, Rule


class TransformApplicationRule(Rule):
    """A rule that checks each application of a transform: `jax.jit(f)` as a call, or
    `@jax.grad` / `@partial(jax.jit, ...)` as a decorator. Subclasses define `check`."""

    @classmethod
    def callees(cls) -> Callees:
        """Calls of the transforms that wrap a function (`jax.jit(f)`, not `jax.jvp`)."""
        return Callees(names=function_wrappers())

    def visit_Call(self, node: cst.Call, site: Site) -> None:
        application = self.facts.transform_applied(node, site)
        if application is not None:
            self.check(application)

    def visit_FunctionDef(self, node: cst.FunctionDef, site: Site) -> None:
        for application in self.facts.transforms_decorating(node, site):
            self.check(application)

    def check(self, application: Application) -> None:
        raise NotImplementedError
