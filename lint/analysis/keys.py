"""Where a PRNG key is consumed twice: the same key drawn from (or split) again.

A key is consumed when a `jax.random` sampler or `split` is given it (first argument or
`key=`), or when it is passed as `key=` to any other call and is known to be a key (an
Equinox layer, a model's dropout). Each function body (and the module body) is walked in
evaluation order with the set of names whose current key has been consumed; assigning a
name gives it a fresh key. Branches of an `if`/`else` (and `try` handlers, `match` cases,
conditional expressions) start from the same state and are merged after, so one use in
each branch is not a reuse. A loop body (and a comprehension) is walked twice: a key from
outside the loop that the body consumes without re-binding it is consumed again on the
next iteration. `jax.random.PRNGKey(0)` with constant arguments inside a loop that repeats
(`while`, `for ... in range(n)`) gives the same key on every iteration and is noted too;
in a loop over configurations one fixed key per case is deliberate, and a constant key
that `fold_in` combines with non-constant data is a different key on every iteration.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import argument_at, keyword_arg
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.scopes import FUNCTION, children_of

if TYPE_CHECKING:
    State = dict[str, cst.Call]  # name -> the call that consumed the key it holds


@dataclasses.dataclass(frozen=True)
class KeyReuse:
    """`second` consumes the key in `name` that `first` already consumed; `in_loop`: on a
    later iteration of a loop (then `first` may be `second` itself)."""

    name: str
    first: cst.Call
    second: cst.Call
    in_loop: bool


class KeyUses:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._sites = {id(call): site for call, site in facts.index.of_type(cst.Call)}
        self.reuses: list[KeyReuse] = []
        self.constant_keys_in_loops: list[cst.Call] = []
        self._seen: set[int] = set()
        self._derived: set[int] = set()  # constant keys that `fold_in` turns into per-iteration keys
        self._repeats: list[bool] = []  # for each loop around: does it repeat one computation?
        module = facts.index.module
        self._block(module.body, {})
        for scope in facts.index.body_scopes.values():
            if scope.kind == FUNCTION:
                self._block(scope.node.body.body, {})  # type: ignore[attr-defined]

    def consumed_key(self, call: cst.Call) -> str | None:
        """The name whose key `call` consumes, else None."""
        site = self._sites.get(id(call))
        if site is None:
            return None
        qualname = self.facts.qualname(call.func, site.scope)
        if qualname is not None and qualname.startswith("jax.random."):
            if not jax_api.consumes_key(qualname):
                return None
            argument = argument_at(call, "key", 0)
            return argument.value.value if argument is not None and isinstance(argument.value, cst.Name) else None
        argument = keyword_arg(call, "key")
        if argument is not None and isinstance(argument.value, cst.Name) and \
                self.facts.kind(argument.value, site) is Kind.KEY:
            return argument.value.value
        return None

    # -- statements ----------------------------------------------------------------------

    def _block(self, statements: Sequence[cst.CSTNode], state: State | None) -> State | None:
        """Walk statements from `state`; the state after them, or None if none falls through."""
        for statement in statements:
            if state is None:
                return None
            state = self._statement(statement, state)
        return state

    def _statement(self, node: cst.CSTNode, state: State) -> State | None:
        if isinstance(node, cst.SimpleStatementLine):
            return self._block(node.body, state)
        if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            self._expression(node.value, state)
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                self._expression(target, state, only_reads=True)
                _rebind(target, state)
            return state
        if isinstance(node, (cst.Return, cst.Raise)):
            for part in (getattr(node, "value", None), getattr(node, "exc", None)):
                self._expression(part, state)
            return None
        if isinstance(node, (cst.Break, cst.Continue)):
            return None
        if isinstance(node, cst.Expr):
            self._expression(node.value, state)
            return state
        if isinstance(node, cst.If):
            self._expression(node.test, state)
            branches = [self._block(node.body.body, dict(state))]
            orelse = node.orelse
            branches.append(dict(state) if orelse is None else
                            self._statement(orelse, dict(state)) if isinstance(orelse, cst.If) else
                            self._block(orelse.body.body, dict(state)))
            return _merge(branches)
        if isinstance(node, (cst.For, cst.While)):
            return self._loop(node, state)
        if isinstance(node, cst.With):
            for item in node.items:
                self._expression(item.item, state)
                if item.asname is not None:
                    _rebind(item.asname.name, state)
            return self._block(node.body.body, state)
        if isinstance(node, cst.Try):
            after = self._block(node.body.body, dict(state))
            start = _merge([state, after])
            branches = [self._block(handler.body.body, dict(start or {})) for handler in node.handlers]
            if node.orelse is not None and after is not None:
                after = self._block(node.orelse.body.body, after)
            merged = _merge([after, *branches])
            if node.finalbody is not None:
                merged = self._block(node.finalbody.body.body, merged if merged is not None else dict(state))
            return merged
        if isinstance(node, cst.Match):
            self._expression(node.subject, state)
            return _merge([self._block(case.body.body, dict(state)) for case in node.cases] + [dict(state)])
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            state.pop(node.name.value, None)  # walked on its own (functions) or not at all (classes)
            return state
        return state

    def _loop(self, node: cst.For | cst.While, state: State) -> State | None:
        """The body twice: what the first iteration consumed is consumed again by the second."""
        head = node.iter if isinstance(node, cst.For) else node.test
        self._expression(head, state)
        self._repeats.append(isinstance(node, cst.While) or self._counting(node.iter))
        first = self._iteration(node, dict(state))
        second = self._iteration(node, dict(first), again=True) if first is not None else None
        self._repeats.pop()
        after = _merge([state, first, second])
        if node.orelse is not None and after is not None:
            after = self._block(node.orelse.body.body, after)
        return after

    def _iteration(self, node: cst.For | cst.While, state: State, again: bool = False) -> State | None:
        if isinstance(node, cst.For):
            _rebind(node.target, state)
        elif again:
            self._expression(node.test, state)
        found = len(self.reuses)
        result = self._block(node.body.body, state)
        if again:
            self.reuses[found:] = [dataclasses.replace(r, in_loop=True) for r in self.reuses[found:]]
        return result

    # -- expressions ---------------------------------------------------------------------

    def _expression(self, node: cst.CSTNode | None, state: State, only_reads: bool = False) -> None:
        """Consume keys in evaluation order: a call's function and arguments before the call."""
        if node is None or isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
            return
        if isinstance(node, cst.Name) and only_reads:
            return
        if isinstance(node, cst.IfExp):
            self._expression(node.test, state)
            branches = [dict(state), dict(state)]
            self._expression(node.body, branches[0])
            self._expression(node.orelse, branches[1])
            state.update(_merge(branches) or {})
            return
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            self._comprehension(node, state)
            return
        if isinstance(node, cst.Call):
            self._note_derived(node)
        for child in _children(node):
            self._expression(child, state)
        if isinstance(node, cst.Call):
            self._call(node, state)

    def _comprehension(self, node: cst.BaseComp, state: State) -> None:
        """The first `for`'s iterable once; the rest, and the element, on two iterations."""
        self._expression(node.for_in.iter, state)
        self._repeats.append(self._counting(node.for_in.iter))
        inner = dict(state)
        for again in (False, True):
            found = len(self.reuses)
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                _rebind(clause.target, inner)
                if clause is not node.for_in:
                    self._expression(clause.iter, inner)
                for condition in clause.ifs:
                    self._expression(condition.test, inner)
                clause = clause.inner_for_in
            parts = (node.key, node.value) if isinstance(node, cst.DictComp) else (
                (node.elt,) if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) else ())
            for part in parts:
                self._expression(part, inner)
            if again:
                self.reuses[found:] = [dataclasses.replace(r, in_loop=True) for r in self.reuses[found:]]
        self._repeats.pop()

    def _call(self, call: cst.Call, state: State) -> None:
        if self._repeats and self._repeats[-1] and self._constant_key(call) and id(call) not in self._seen:
            self._seen.add(id(call))
            self.constant_keys_in_loops.append(call)
        name = self.consumed_key(call)
        if name is None:
            return
        first = state.get(name)
        if first is None:
            state[name] = call
        elif id(call) not in self._seen:
            self._seen.add(id(call))
            self.reuses.append(KeyReuse(name, first, call, in_loop=False))

    def _note_derived(self, call: cst.Call) -> None:
        """`fold_in(PRNGKey(0), i)` with data that is not a constant: the constant key is only
        the root of a key that differs for every `i`, not a key drawn from in the loop."""
        site = self._sites.get(id(call))
        if site is None or not jax_api.derives_key(self.facts.qualname(call.func, site.scope)):
            return
        key, data = argument_at(call, "key", 0), argument_at(call, "data", 1)
        if key is not None and data is not None and not _constant(data.value):
            self._derived.add(id(key.value))

    def _counting(self, iterable: cst.BaseExpression) -> bool:
        """`range(n)` (or `enumerate`/`zip` of one): the loop repeats one computation n times,
        unlike a loop over configurations, where one fixed key per case is deliberate."""
        if not isinstance(iterable, cst.Call) or not isinstance(iterable.func, cst.Name):
            return False
        name = iterable.func.value
        if self.facts.index.lookup(name, self.facts.index.module_scope):
            return False
        if name == "range":
            return True
        return name in ("enumerate", "zip") and any(self._counting(arg.value) for arg in iterable.args)

    def _constant_key(self, call: cst.Call) -> bool:
        site = self._sites.get(id(call))
        return (site is not None and id(call) not in self._derived
                and jax_api.makes_key(self.facts.qualname(call.func, site.scope))
                and all(_constant(arg.value) for arg in call.args))


def _children(node: cst.CSTNode) -> Iterable[cst.CSTNode]:
    if isinstance(node, cst.Call):
        return [node.func, *(arg.value for arg in node.args)]
    return children_of(node)


def _constant(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        return _constant(node.expression)
    return isinstance(node, (cst.BaseNumber, cst.BaseString))


def _rebind(target: cst.BaseExpression, state: State) -> None:
    """A name assigned gets a fresh value: forget that its old key was consumed."""
    if isinstance(target, cst.Name):
        state.pop(target.value, None)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _rebind(element.value, state)
    elif isinstance(target, cst.StarredElement):
        _rebind(target.value, state)


def _merge(states: Iterable[State | None]) -> State | None:
    """After branches: a key consumed on any branch that falls through is consumed."""
    merged: State | None = None
    for state in states:
        if state is None:
            continue
        if merged is None:
            merged = dict(state)
        else:
            for name, call in state.items():
                merged.setdefault(name, call)
    return merged


_CACHE: weakref.WeakKeyDictionary[Facts, KeyUses] = weakref.WeakKeyDictionary()


def key_uses(facts: Facts) -> KeyUses:
    """The analysis for this file, computed on first use and shared by the rules."""
    if facts not in _CACHE:
        _CACHE[facts] = KeyUses(facts)
    return _CACHE[facts]
