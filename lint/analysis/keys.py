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

Not every reuse is a bug: reuse is one when two draws the program treats as independent get
the same key. Each reuse carries `deliberate`, the reason it looks intended (None when it
does not), so a rule can report only the bugs by default and every reuse in a strict mode:
- the same key given twice to the same constructor or function rebuilds the same thing
  (an identical model, identical layers in a test);
- a key drawn from and then split or passed on, when the key came from outside (the
  dataloader's `permutation(key)` then `split(key)`): the two uses compute unrelated things;
- two draws from one key in a test: correlated test inputs, not two independent streams;
- one key consumed on every iteration of a loop over configurations (common random numbers
  across conditions), or of a loop that splits a fresh key of its own each iteration (a
  fixed sample key, so plots across training are comparable), unless the draw takes its
  shape from the loop's variable: `{k: normal(key, v.shape) for k, v in params.items()}`
  draws each parameter, `[normal(key, (m, n)) for m, n in zip(sizes, sizes[1:])]` each
  layer, and those draws are meant to be independent;
- a draw whose value never meets the other: it is only displayed or dropped (`print(...)` of
  it, a bare expression statement, a call whose result is thrown away), or the name holding
  it is assigned again before anything but a `print` read it (`x = normal(key); print(x)`,
  then `x = normal(key, (n, n))` for a timing input), or the key goes to a model whose
  randomness is switched off (`inference=True`, `enable_dropout=False`: the table's
  `keys.inference_flags`), which draws nothing from it.
A key that was split (or handed to a constructor that splits it) and is then used again is
never deliberate: the later draws equal the subkeys' draws. A key is also consumed when it is
passed by position to a function of this file that splits or draws from that parameter.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

import libcst as cst
from odelint.analysis import jax_api
from odelint.analysis.calls import argument_at, keyword_arg
from odelint.analysis.facts import Facts, Kind
from odelint.analysis.project import is_test_or_benchmark
from odelint.analysis.scopes import (
    COMPREHENSION,
    FUNCTION,
    MODULE,
    Scope,
    children_of,
    names_read,
    nested_code,
    own_nodes,
    target_names,
)

SPLIT, DRAW, PASS = "split", "draw", "pass"  # how a call consumes a key
_APART = ("one draw's value never meets the other: it is only displayed, dropped or overwritten unread, "
          "or handed to a model whose randomness is switched off")

if TYPE_CHECKING:
    State = dict[str, tuple[cst.Call, str]]  # name -> the call that consumed the key it holds, and how


@dataclasses.dataclass(frozen=True)
class KeyReuse:
    """`second` consumes the key in `name` that `first` already consumed; `in_loop`: on a
    later iteration of a loop (then `first` may be `second` itself)."""

    name: str
    first: cst.Call
    second: cst.Call
    in_loop: bool
    deliberate: str | None = None  # why the reuse looks intended; None: two independent draws share a key


@dataclasses.dataclass(frozen=True)
class _Found:
    """What the walk of one function's body added to the file's findings."""

    reuses: list[KeyReuse]
    constant_keys: list[cst.Call]
    drawn: set[int]


@functools.cache
def _comprehensions() -> frozenset[type]:
    return frozenset({cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp})


class KeyUses:
    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._sites = {id(call): site for call, site in facts.index.of_type(cst.Call)}
        self._qualnames: dict[int, str | None] = {}
        self._consumptions: dict[int, list[tuple[str, str]]] = {}
        self.reuses: list[KeyReuse] = []
        self.constant_keys_in_loops: list[cst.Call] = []
        self.drawn_constant_keys: set[int] = set()  # constant keys in loops that a jax.random call receives
        # tests and benchmarks make inputs and compare key derivations: their reuse is throwaway
        # a test or benchmark: fixed keys there are reproducible inputs, not independent draws
        self.in_test = is_test_or_benchmark(facts.path)
        self._consumed_parameters: dict[int, set[str]] | None = None
        self._from_split: set[str] = set()       # names bound by `a, b = split(...)`: a key stream
        self._constant_names: dict[str, int] = {}  # name -> the constant key call it holds
        self._loop_splits: list[bool] = []        # for each loop around: does its body split a key afresh?
        self._seen: set[int] = set()
        self._derived: set[int] = set()  # constant keys that `fold_in` turns into per-iteration keys
        self._repeats: list[bool] = []  # for each loop around: does it repeat one computation?
        # a draw's value, followed within its body: whether it ever meets anything else
        # name -> (id of the consuming call whose value it holds, unread but by `print`; its depth)
        self._holds: dict[str, tuple[int, int]] = {}
        self._idle: set[int] = set()       # consuming calls whose value meets nothing (shown, dropped, unread)
        self._shown: set[int] = set()      # calls that stand alone as a statement, or inside `print`
        self._consuming: set[int] = set()  # calls that consume a key
        self._assigning: frozenset[str] = frozenset()  # the names the statement being walked assigns
        self._depth = 0                    # branches and loops around the statement being walked
        self._body: Scope | None = None
        self._closure_reads: frozenset[str] | None = None  # names the body's nested code reads
        self._calls_in: dict[Scope, list[cst.Call]] = {}  # each body's own calls (its comprehensions' too)
        walked = self._bodies_with_key_calls()
        module = facts.index.module
        if facts.index.module_scope in walked:
            self._walk_body(facts.index.module_scope, module.body)
        kept, keeping = facts.carried(KeyUses), {}
        for scope in facts.index.body_scopes.values():
            if scope.kind != FUNCTION or scope not in walked:
                continue
            if kept is None:  # a file linted once: nothing to compare with, nothing to keep
                self._walk_body(scope, scope.node.body.body)  # type: ignore[attr-defined]
            else:  # kept for the same scope only: a replaced statement's scopes are new, its nodes need not be
                last = kept.get(scope.node)
                found = self._walk_or_reuse(scope, last[1] if last is not None and last[0] is scope else None)
                keeping[scope.node] = (scope, found)
        if kept is not None:
            kept.clear()
            kept.update(keeping)

    def _walk_or_reuse(self, scope: Scope, last: tuple[tuple, _Found] | None) -> tuple[tuple, _Found]:
        """Walk a function's body, or take what the last lint found there: in an editor, a
        function the edit did not touch is the same node, and when everything the walk reads
        from outside it is unchanged (`_inputs`) the walk would find the same."""
        inputs = self._inputs(scope)
        if last is not None and last[0] == inputs:
            self.reuses += last[1].reuses
            self.constant_keys_in_loops += last[1].constant_keys
            self.drawn_constant_keys |= last[1].drawn
            return last
        reuses, constants, drawn = len(self.reuses), len(self.constant_keys_in_loops), set(self.drawn_constant_keys)
        self._walk_body(scope, scope.node.body.body)  # type: ignore[attr-defined]
        return inputs, _Found(self.reuses[reuses:], self.constant_keys_in_loops[constants:],
                              self.drawn_constant_keys - drawn)

    def _inputs(self, scope: Scope) -> tuple:
        """What a walk of the body reads from outside its nodes: what its calls call and which
        keys they consume (the model's answers), the functions its calls pass keys to (whether
        they return anything), the bindings of `print`, `range`, `enumerate` and `zip` it
        sees, and whether the file is a test. The nodes are compared by identity."""
        calls = []
        for call in self._calls_in.get(scope, ()):
            consumed = tuple(self.consumptions(call))
            site = self._sites[id(call)]
            callee = (self.facts.callee(call.func, site.scope) if any(how == PASS for _, how in consumed)
                      else None)
            calls.append((call, self._qualname(call), consumed, callee))
        names = [(name, self.facts.index.lookup(name, self.facts.index.module_scope))
                 for name in ("range", "enumerate", "zip")]
        names.append(("print", self.facts.index.lookup("print", scope)))
        seen = tuple((name, tuple((b.kind, b.node, b.qualname) for b in bindings)) for name, bindings in names)
        return self.in_test, tuple(calls), seen

    def _walk_body(self, scope: Scope, statements: Sequence[cst.CSTNode]) -> None:
        self._from_split, self._constant_names = set(), {}
        self._holds, self._body, self._closure_reads = {}, scope, None
        self._block(statements, {})

    def _bodies_with_key_calls(self) -> set[Scope]:
        """The function bodies (and the module body) whose own code holds a call that makes,
        derives, splits, draws from or passes on a key: a walk of any other body finds nothing,
        and most functions of a training script never touch a key."""
        bodies: set[Scope] = set()
        for call, site in self.facts.index.of_type(cst.Call):
            scope = site.scope
            while scope.kind == COMPREHENSION and scope.parent is not None:
                scope = scope.parent  # a comprehension runs in the body around it
            self._calls_in.setdefault(scope, []).append(call)
            if scope in bodies or scope.kind not in (FUNCTION, MODULE):
                continue
            qualname = self._qualname(call)
            if (jax_api.consumes_key(qualname) or jax_api.makes_key(qualname) or jax_api.derives_key(qualname)
                    or self.consumptions(call)):
                bodies.add(scope)
        return bodies

    def consumed_key(self, call: cst.Call) -> str | None:
        """The name whose key `call` consumes, else None."""
        found = self.consumptions(call)
        return found[0][0] if found else None

    def consumptions(self, call: cst.Call) -> list[tuple[str, str]]:
        """(name, how) for each key `call` consumes: SPLIT, DRAW, or PASS (handed to a callee)."""
        found = self._consumptions.get(id(call))
        if found is None:
            found = self._consumptions[id(call)] = self._find_consumptions(call)
        return found

    def _find_consumptions(self, call: cst.Call) -> list[tuple[str, str]]:
        site = self._sites.get(id(call))
        if site is None:
            return []
        qualname = self._qualname(call)
        if qualname is not None and qualname.startswith("jax.random."):
            if not jax_api.consumes_key(qualname):
                return []
            argument = argument_at(call, "key", 0)
            how = SPLIT if jax_api.splits_key(qualname) else DRAW
            if argument is None or not isinstance(argument.value, cst.Name):
                return []
            return [(argument.value.value, how)]
        argument = keyword_arg(call, "key")
        if argument is not None and isinstance(argument.value, cst.Name) and (
                self.facts.kind(argument.value, site) is Kind.KEY or
                argument.value.value in self._parameters_consumed().get(id(site.scope.node), ())):
            return [(argument.value.value, PASS)]
        return [(name, PASS) for name in self._passed_by_position(call, site.scope)]

    def _passed_by_position(self, call: cst.Call, scope: Scope) -> list[str]:
        """Names given by position to a function of this file that consumes that parameter."""
        consuming = self._parameters_consumed()
        if not consuming or not call.args:
            return []  # no function of the file draws from a parameter, or nothing is passed
        callee = self.facts.callee(call.func, scope)
        if callee is None:
            return []
        consumed = consuming.get(id(callee), set())
        parameters = [param.name.value for param in (*callee.params.posonly_params, *callee.params.params)]
        names = []
        for position, arg in enumerate(call.args):
            if arg.keyword is not None or arg.star or position >= len(parameters):
                break
            if isinstance(arg.value, cst.Name) and parameters[position] in consumed:
                names.append(arg.value.value)
        return names

    def _parameters_consumed(self) -> dict[int, set[str]]:
        """For each function of the file: the names (its parameters among them) that a
        jax.random call in its body consumes, so they hold keys."""
        if self._consumed_parameters is None:
            self._consumed_parameters = {}
            keyed = {name for name in self.facts.called_names()
                     if jax_api.consumes_key(name) or jax_api.derives_key(name)}
            for call, site in self.facts.calls_to(keyed):
                function = site.scope.node
                if site.scope.kind != FUNCTION or not isinstance(function, cst.FunctionDef):
                    continue
                argument = argument_at(call, "key", 0)
                if argument is not None and isinstance(argument.value, cst.Name):
                    self._consumed_parameters.setdefault(id(function), set()).add(argument.value.value)
        return self._consumed_parameters

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
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            plain = not isinstance(node, cst.AugAssign)
            assigned = [name for target in targets for name in target_names(target)] if plain else []
            self._assigning = frozenset(assigned)
            self._expression(node.value, state)
            self._assigning = frozenset()
            for target in targets:
                if plain:
                    self._target_reads(target, state)  # reads in a target: `x[f(key)] = ...`
                else:
                    self._expression(target, state)    # `x += ...` reads `x`
                _rebind(target, state)
                self._note_binding(target, node.value)
            self._release(assigned)
            if len(targets) == 1 and type(targets[0]) is cst.Name and id(node.value) in self._consuming:
                self._holds[targets[0].value] = (id(node.value), self._depth)
            return state
        if isinstance(node, (cst.Return, cst.Raise)):
            for part in (getattr(node, "value", None), getattr(node, "exc", None)):
                self._expression(part, state)
            return None
        if isinstance(node, (cst.Break, cst.Continue)):
            return None
        if isinstance(node, cst.Expr):
            self._show(node.value, state)
            return state
        if isinstance(node, cst.If):
            self._expression(node.test, state)
            self._depth += 1
            branches = [self._settled(self._block(node.body.body, dict(state)))]
            orelse = node.orelse
            branches.append(dict(state) if orelse is None else self._settled(
                self._statement(orelse, dict(state)) if isinstance(orelse, cst.If) else
                self._block(orelse.body.body, dict(state))))
            self._depth -= 1
            return _merge(branches)
        if isinstance(node, (cst.For, cst.While)):
            return self._loop(node, state)
        if isinstance(node, cst.With):
            for item in node.items:
                self._expression(item.item, state)
                if item.asname is not None:
                    _rebind(item.asname.name, state)
            return self._block(node.body.body, state)
        if isinstance(node, (cst.Try, cst.Match)):
            self._depth += 1
            try:
                return self._alternatives(node, state)
            finally:
                self._depth -= 1
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            state.pop(node.name.value, None)  # walked on its own (functions) or not at all (classes)
            return state
        return state

    def _alternatives(self, node: cst.Try | cst.Match, state: State) -> State | None:
        """A `try` (its body may stop anywhere) or a `match`: paths that may or may not run."""
        if isinstance(node, cst.Try):
            after = self._settled(self._block(node.body.body, dict(state)))
            start = _merge([state, after])
            branches = [self._settled(self._block(handler.body.body, dict(start or {}))) for handler in node.handlers]
            if node.orelse is not None and after is not None:
                after = self._settled(self._block(node.orelse.body.body, after))
            merged = _merge([after, *branches])
            if node.finalbody is not None:
                merged = self._block(node.finalbody.body.body, merged if merged is not None else dict(state))
            return self._settled(merged)
        self._expression(node.subject, state)
        return _merge([self._settled(self._block(case.body.body, dict(state))) for case in node.cases] + [dict(state)])

    # -- where a draw's value goes -------------------------------------------------------

    def _show(self, value: cst.BaseExpression, state: State) -> None:
        """An expression statement: its value is dropped (or shown, as a notebook cell's last
        line), and `print(...)` only shows its arguments: none of them meets other code."""
        if type(value) is cst.Name:
            return
        if type(value) is cst.Call:
            self._shown.add(id(value))
            call = cast(cst.Call, value)
            if type(call.func) is cst.Name and call.func.value == "print" and not self.facts.index.lookup(
                    "print", self._body or self.facts.index.module_scope):
                for arg in call.args:
                    if not arg.star and type(arg.value) is cst.Call:
                        self._shown.add(id(arg.value))
                    if arg.star or type(arg.value) is not cst.Name:
                        self._expression(arg.value, state)
                return
        self._expression(value, state)

    def _target_reads(self, target: cst.BaseExpression, state: State) -> None:
        """What an assignment's target reads (`x[f(key)] = ...`, `self.w = ...`); a plain name
        reads nothing."""
        kind = type(target)
        if kind is cst.Name:
            return
        if kind is cst.Tuple or kind is cst.List:
            for element in target.elements:  # type: ignore[attr-defined]
                self._target_reads(element.value, state)
        elif kind is cst.StarredElement:
            self._target_reads(target.value, state)  # type: ignore[attr-defined]
        else:
            self._expression(target, state)

    def _settled(self, state: State | None) -> State | None:
        """Leaving a path that may not run (a branch, a handler, a loop): what it drew is taken
        as used after it, since another path may leave the name unassigned."""
        for name, held in list(self._holds.items()):
            if held[1] >= self._depth:
                del self._holds[name]
        return state

    def _release(self, names: Iterable[str]) -> None:
        """Names assigned anew: a draw a name held dies unread if nothing but `print` read it,
        the assignment is on the draw's own path (not in a branch that may not run) and no
        nested function or `global` declaration could read the old value."""
        for name in names:
            held = self._holds.pop(name, None)
            if held is not None and held[1] == self._depth and not self._escapes(name):
                self._idle.add(held[0])

    def _escapes(self, name: str) -> bool:
        scope = self._body
        if scope is None or name in scope.global_names or name in scope.nonlocal_names:
            return True
        if self._closure_reads is None:
            reads: set[str] = set()  # what nested code may read of this body's names
            for inner in self.facts.index.body_scopes.values():
                if inner.parent is not scope:
                    continue
                if isinstance(inner.node, (cst.FunctionDef, cst.Lambda)):
                    reads.update(name.value for name in self.facts.free_names(inner.node))
                else:  # a class body or a comprehension: every name it mentions
                    reads.update(names_read(inner.node))
            self._closure_reads = frozenset(reads)
        return name in self._closure_reads

    def _meets_nothing(self, call: cst.Call) -> bool:
        """Is this draw's value only displayed or dropped, or about to be overwritten unread by
        the statement being walked?"""
        if id(call) in self._idle:
            return True
        return any(held == (id(call), self._depth) and name in self._assigning and not self._escapes(name)
                   for name, held in self._holds.items())

    def _randomness_off(self, call: cst.Call) -> bool:
        """Is the call made with a keyword that switches the model's randomness off
        (`model(x, key=k, inference=True)`), or does it call a function wrapped with one
        (`jax.vmap(partial(model, enable_dropout=False))(xs, key=keys)`)?"""
        pending = [call]
        while pending:
            node = pending.pop()
            for arg in node.args:
                value = arg.value
                if arg.keyword is not None and type(value) is cst.Name and value.value in ("True", "False"):
                    if jax_api.switches_randomness_off(arg.keyword.value, value.value == "True"):
                        return True
                elif node is not call and arg.keyword is None and type(value) is cst.Call:
                    pending.append(value)  # the function a wrapper wraps
            if type(node.func) is cst.Call:
                pending.append(node.func)
        return False

    def _returns_nothing(self, call: cst.Call) -> bool:
        """A function of this file with no `return <value>` (and no `yield`): called as a
        statement, what it draws reaches only what it prints or writes."""
        site = self._sites.get(id(call))
        callee = self.facts.callee(call.func, site.scope) if site is not None else None
        if callee is None:
            return False
        returns = (node.value is not None for node in own_nodes(callee.body, cst.Return))
        return not any(returns) and not any(True for _ in own_nodes(callee.body, cst.Yield))

    def _note_binding(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """Remember names bound by `a, b = split(...)` (a key stream the function manages) and
        names holding a constant key; a split assigned in a loop gives it a fresh key."""
        names = target_names(target)
        split = isinstance(value, cst.Call) and jax_api.splits_key(self._qualname(value))
        if split and self._loop_splits:
            self._loop_splits[-1] = True
        if split and isinstance(target, (cst.Tuple, cst.List)):
            self._from_split.update(names)
        for name in names:
            self._constant_names.pop(name, None)
        if isinstance(target, cst.Name) and isinstance(value, cst.Call) and self._constant_key(value):
            self._constant_names[target.value] = id(value)

    def _qualname(self, call: cst.Call) -> str | None:
        """The qualified name of what `call` calls, resolved once per call: the walk asks for it
        from several places, and twice for each call of a loop body."""
        key = id(call)
        if key in self._qualnames:
            return self._qualnames[key]
        site = self._sites.get(key)
        found = self._qualnames[key] = self.facts.qualname(call.func, site.scope) if site is not None else None
        return found

    def _loop(self, node: cst.For | cst.While, state: State) -> State | None:
        """The body twice: what the first iteration consumed is consumed again by the second."""
        head = node.iter if isinstance(node, cst.For) else node.test
        self._expression(head, state)
        self._repeats.append(isinstance(node, cst.While) or self._counting(node.iter))
        self._loop_splits.append(False)
        found = len(self.reuses)
        self._depth += 1
        first = self._iteration(node, dict(state))
        second = self._settled(self._iteration(node, dict(first), again=True) if first is not None else None)
        self._depth -= 1
        fresh = self._loop_splits.pop()
        if self._loop_splits and fresh:
            self._loop_splits[-1] = True
        targets = set(target_names(node.target)) if isinstance(node, cst.For) else set()
        self._judge_loop(found, targets, fresh)
        self._repeats.pop()
        after = _merge([state, first, second])
        if node.orelse is not None and after is not None:
            after = self._block(node.orelse.body.body, after)
        return after

    def _judge_loop(self, found: int, targets: set[str], fresh: bool) -> None:
        """A key consumed on every iteration is deliberate in a loop over configurations, or when
        the consuming call takes the loop's variable (one key for every case: common random
        numbers across conditions), or when the loop splits a fresh key of its own (this one is
        kept fixed on purpose, e.g. to sample the same points for plots after every epoch).
        Never when the draw takes its shape from the loop's variable: the loop then draws for
        different objects (each parameter of a dict, each layer's weights), which common
        random numbers cannot be, since they must have one shape to be compared."""
        for position in range(found, len(self.reuses)):
            reuse = self.reuses[position]
            if not reuse.in_loop or reuse.first is not reuse.second or reuse.deliberate is not None:
                continue
            why = ("test or benchmark inputs made from one key" if self.in_test else
                   None if targets & self._shape_read(reuse.second) else
                   "one key for every case of the loop (common random numbers across its cases)"
                   if not self._repeats[-1] or targets & names_read(*(arg.value for arg in reuse.second.args)) else
                   "a fixed key beside a key split afresh on every iteration" if fresh else None)
            self.reuses[position] = dataclasses.replace(reuse, deliberate=why)

    def _shape_read(self, call: cst.Call) -> frozenset[str]:
        """The names a sampler's shape argument reads (`normal(key, shape(v))`: {shape, v})."""
        position = jax_api.shape_position(self._qualname(call))
        argument = argument_at(call, "shape", position) if position is not None else None
        return names_read(argument.value) if argument is not None else frozenset()

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

    def _expression(self, node: cst.CSTNode | None, state: State) -> None:
        """Consume keys in evaluation order: a call's function and arguments before the call.

        Dispatches on the exact node type: `isinstance` against LibCST's classes goes through
        `ABCMeta.__instancecheck__`, about ten times slower, and this runs for every node of
        every function that touches a key."""
        kind = type(node)
        if kind is cst.Name:
            self._holds.pop(node.value, None)  # type: ignore[union-attr]  # its draw met other code
            return  # a name consumes nothing itself
        if node is None or kind in nested_code():
            return  # a nested definition runs elsewhere
        if kind is cst.Call:
            call: cst.Call = node  # type: ignore[assignment]
            self._note_derived(call)
            if self._randomness_off(call):  # it draws nothing from the keys it is given
                self._idle.update(id(arg.value) for arg in call.args if type(arg.value) is cst.Call)
                self._idle.add(id(call))
            self._expression(call.func, state)
            for arg in call.args:
                self._expression(arg.value, state)
            self._call(call, state)
            return
        if kind is cst.IfExp:
            test: cst.IfExp = node  # type: ignore[assignment]
            self._expression(test.test, state)
            branches = [dict(state), dict(state)]
            self._expression(test.body, branches[0])
            self._expression(test.orelse, branches[1])
            state.update(_merge(branches) or {})
            return
        if kind in _comprehensions():
            self._comprehension(node, state)  # type: ignore[arg-type]
            return
        for child in children_of(node):
            self._expression(child, state)

    def _comprehension(self, node: cst.BaseComp, state: State) -> None:
        """The first `for`'s iterable once; the rest, and the element, on two iterations."""
        self._expression(node.for_in.iter, state)
        self._repeats.append(self._counting(node.for_in.iter))
        inner = dict(state)
        start = len(self.reuses)
        targets: set[str] = set()
        for again in (False, True):
            found = len(self.reuses)
            clause: cst.CompFor | None = node.for_in
            while clause is not None:
                _rebind(clause.target, inner)
                targets.update(target_names(clause.target))
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
        self._judge_loop(start, targets, fresh=False)
        self._repeats.pop()

    def _call(self, call: cst.Call, state: State) -> None:
        if self._repeats and self._repeats[-1] and self._constant_key(call) and id(call) not in self._seen:
            self._seen.add(id(call))
            self.constant_keys_in_loops.append(call)
        if self._draws_from_key_expression(call):
            self._note_drawn_constant(call)  # `jax.random.normal(jax.random.PRNGKey(0))`
        for name, how in self.consumptions(call):
            self._consuming.add(id(call))
            if how != PASS:
                self._note_drawn_constant(call)
            if id(call) in self._shown and (how != PASS or self._returns_nothing(call)):
                self._idle.add(id(call))
            earlier = state.get(name)
            if earlier is None:
                state[name] = (call, how)
                continue
            apart = self._meets_nothing(earlier[0]) or id(call) in self._idle
            if id(call) not in self._seen:
                self._seen.add(id(call))
                why = _APART if apart else self._deliberate(name, earlier, (call, how))
                self.reuses.append(KeyReuse(name, earlier[0], call, in_loop=False, deliberate=why))
            if apart and id(call) not in self._idle:
                state[name] = (call, how)  # later draws are compared with this one, which is kept

    def _draws_from_key_expression(self, call: cst.Call) -> bool:
        """A `jax.random` function that splits or draws from a key made in its argument."""
        site = self._sites.get(id(call))
        argument = argument_at(call, "key", 0)
        if site is None or argument is None or not isinstance(argument.value, cst.Call):
            return False
        return jax_api.consumes_key(self._qualname(call))

    def _note_drawn_constant(self, call: cst.Call) -> None:
        argument = argument_at(call, "key", 0)
        if argument is None:
            return
        if isinstance(argument.value, cst.Name) and argument.value.value in self._constant_names:
            self.drawn_constant_keys.add(self._constant_names[argument.value.value])
        elif isinstance(argument.value, cst.Call):
            self.drawn_constant_keys.add(id(argument.value))

    def _deliberate(self, name: str, first: tuple[cst.Call, str], second: tuple[cst.Call, str]) -> str | None:
        """Why using the key of `name` again looks intended, or None when it is a bug."""
        (first_call, first_how), (second_call, second_how) = first, second
        if self.in_test:
            return "test or benchmark inputs made from one key: correlated on purpose or harmlessly"
        if first_how == SPLIT:
            return None  # the key was handed out as subkeys: later draws repeat theirs
        module = self.facts.index.module
        if first_how == PASS and second_how == PASS and \
                module.code_for_node(first_call.func) == module.code_for_node(second_call.func):
            return "the same key given to the same callee twice rebuilds the same thing"
        if first_how == DRAW and second_how != DRAW and name not in self._from_split:
            return "a key from outside drawn from and then split: the two uses compute unrelated things"
        return None

    def _note_derived(self, call: cst.Call) -> None:
        """`fold_in(PRNGKey(0), i)` with data that is not a constant: the constant key is only
        the root of a key that differs for every `i`, not a key drawn from in the loop."""
        site = self._sites.get(id(call))
        if site is None or not jax_api.derives_key(self._qualname(call)):
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
        """`PRNGKey(0)`: constant arguments, not the root of a `fold_in` with varying data."""
        site = self._sites.get(id(call))
        return (site is not None and id(call) not in self._derived
                and jax_api.makes_key(self._qualname(call))
                and all(_constant(arg.value) for arg in call.args))


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


def key_uses(facts: Facts) -> KeyUses:
    """The analysis for this file, built once as a part of its facts and shared by the rules."""
    return facts.part(KeyUses, KeyUses)
