"""Named facts of the Sketch that a rule's declared needs ask (`Needs.fact("traced_print")`):
questions over CPython's `ast` too particular for a word of odelint.analysis.needs, kept with
the model (never in a rule) and, like every Sketch answer, erring towards "maybe"."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator
from typing import cast

import libcst as cst
from odelint.analysis import jax_api, literals
from odelint.analysis.classes import initialisers_closed
from odelint.analysis.differentiation import STOP_GRADIENT
from odelint.analysis.intervals import guard
from odelint.analysis.jitted import COMPILING, STATIC_KEYWORDS
from odelint.analysis.sketch import FunctionNode, Sketch, children, walk
from odelint.analysis.sketch_arrays import ARRAY_METHODS, at_update_statement, init_assignments
from odelint.analysis.sketch_calls import (
    PARTIAL,
    UNHASHABLE_LITERALS,
    called_names,
    configures,
    enclosing_class,
    exact_string,
    keyword,
    may_be_module_class,
    may_name_module,
    only_functions,
    parameters,
    positional,
    positional_names,
    static_options,
)
from odelint.analysis.sketch_reach import (
    COMPREHENSIONS,
    bound_before,
    bound_between,
    rebinds_each_iteration,
    repeating_loop,
    scope_of,
)

FACTS: dict[str, Callable[[Sketch], bool]] = {}


def fact(name: str) -> Callable[[Callable[[Sketch], bool]], Callable[[Sketch], bool]]:
    def register(function: Callable[[Sketch], bool]) -> Callable[[Sketch], bool]:
        FACTS[name] = function
        return function

    return register


@fact("traced_print")
def traced_print(sketch: Sketch) -> bool:
    """A builtin `print` in code that may run traced, given a value that may be traced."""
    return any(isinstance(node.func, ast.Name) and node.func.id == "print"
               and any(sketch.reach.may_be_traced(arg) for arg in (*node.args, *node.keywords))
               for node in sketch.nodes_in(sketch.traced_functions(), ast.Call))


@fact("traced_truth_test")
def traced_truth_test(sketch: Sketch) -> bool:
    """A truth test or conversion (`if`, `while`, `and`, `bool()`, ...) of a value that may be
    a traced array (`traced_array`: traced, and an array by its shape), in code that may run traced."""
    return any(_may_be_array_valued(sketch, value) and sketch.reach.may_be_traced(value)
               for node in sketch.nodes_in(sketch.traced_functions(), *_TRUTH_TESTS)
               for value in _tested_values(node))


def _may_be_array_valued(sketch: Sketch, node: ast.expr, depth: int = 0) -> bool:
    """May `arrays._array_valued` hold: a value the model may find an array, or a name, an
    item, an array method's result, arithmetic or a comparison over such a value? Not an
    attribute (`state.dynamic_scale`) nor another call (`is_graph_node(x)`), nor a name whose
    last assignment before the read, in its function, gives it one (`_, fsal = self._common()`)."""
    return _shaped_like_array(sketch, node, depth) or sketch.may_be_array(node)


def _shaped_like_array(sketch: Sketch, node: ast.expr, depth: int) -> bool:
    if depth > _DEPTH:
        return True
    inner = depth + 1
    if isinstance(node, ast.Name):
        binding = sketch.reach.last_binding(node)
        if binding is not None and binding.parameter is not None:  # `flag: bool` is a Python value
            return not _declares_plain(sketch, binding.parameter.annotation)
        if binding is None and sketch.imported_only(node.id):  # `math` in `math.prod(shape)`: no value
            return False
        if binding is None or binding.value is None:  # a loop's target, other scopes' bindings: maybe
            return True
        value = binding.value
        for position in binding.path:  # `a, b = carry` unpacks what `carry` holds
            if not isinstance(value, (ast.Tuple, ast.List)) or position >= len(value.elts):
                break
            value = value.elts[position]
        return _may_be_array_valued(sketch, value, inner)
    if isinstance(node, ast.Subscript):
        return _may_be_array_valued(sketch, node.value, inner)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Attribute) and node.func.attr in ARRAY_METHODS
                and _may_be_array_valued(sketch, node.func.value, inner))
    if isinstance(node, ast.BinOp):
        return _may_be_array_valued(sketch, node.left, inner) or _may_be_array_valued(sketch, node.right, inner)
    if isinstance(node, ast.UnaryOp):
        return _may_be_array_valued(sketch, node.operand, inner)
    if isinstance(node, ast.Compare):
        return any(_may_be_array_valued(sketch, part, inner) for part in (node.left, *node.comparators))
    return False


_DEPTH = 50  # assignments followed back before the pre-check just says "maybe"


def _declares_plain(sketch: Sketch, annotation: ast.expr | None) -> bool:
    """`float`, `int`, `bool` or `str`, the builtin (`Facts.annotation_kind`: Kind.PLAIN)."""
    return (isinstance(annotation, ast.Name) and annotation.id in ("float", "int", "bool", "str")
            and not sketch.binds(annotation.id))


_TRUTH_TESTS = (ast.If, ast.While, ast.IfExp, ast.Assert, ast.BoolOp, ast.UnaryOp, ast.Call)


def _tested_values(node: ast.AST) -> list[ast.expr]:
    """The values whose truth an `ast` node takes or that it converts, as `_test` and `visit_Call`
    split them (the pre-check's question): operands of `and`/`or`/`not`, not membership tests."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return _truth_operands(node.test)
    if isinstance(node, ast.BoolOp):
        return [operand for value in node.values[:-1] for operand in _truth_operands(value)]
    if isinstance(node, ast.UnaryOp):
        return _truth_operands(node.operand) if isinstance(node.op, ast.Not) else []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in jax_api.tracer_conversions():
        single = len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred)
        return [node.args[0]] if single and not _is_membership(node.args[0]) else []
    return []


def _truth_operands(test: ast.expr) -> list[ast.expr]:
    if isinstance(test, ast.BoolOp):
        return [operand for value in test.values for operand in _truth_operands(value)]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _truth_operands(test.operand)
    return [] if _is_membership(test) else [test]


def _is_membership(value: ast.expr) -> bool:
    return isinstance(value, ast.Compare) and all(isinstance(op, (ast.In, ast.NotIn)) for op in value.ops)


@fact("hashed_array")
def hashed_array(sketch: Sketch) -> bool:
    """A value that may be an array or traced is hashed (a dict key, a set member, a cached
    function's argument, ...)."""
    return any(sketch.may_be_array(value) or (sketch.in_traced(value) and sketch.reach.may_be_traced(value))
               for value in _hashed_values(sketch))


def _hashed_values(sketch: Sketch) -> Iterator[ast.expr]:
    """What the file may hash (the pre-check's view): dict keys, set members, `hash()`
    arguments, keys looked up in dicts or sets, arguments of calls that may run a cached
    function (`Facts.callee`: by name, or through a wrapper such as `jax.jit(cached)`)."""
    for mapping in sketch.of_type(ast.Dict):
        yield from (key for key in mapping.keys if key is not None)
    for members in sketch.of_type(ast.Set):
        yield from members.elts
    containers = {name for name in sketch.identifiers if any(_container(v) for v in sketch.assigned(name))}
    for lookup in sketch.of_type(ast.Subscript):
        base = lookup.value
        if isinstance(base, (ast.Dict, ast.DictComp)) or (isinstance(base, ast.Name) and base.id in containers):
            yield lookup.slice
    for compare in sketch.of_type(ast.Compare):
        left = compare.left
        for operator, right in zip(compare.ops, compare.comparators, strict=True):
            if isinstance(operator, (ast.In, ast.NotIn)) and (
                    _container(right) or (isinstance(right, ast.Name) and right.id in containers)):
                yield left
            left = right
    cached = {id(f) for f in sketch.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
              if any("cache" in sketch.names_in(d) or "lru_cache" in sketch.names_in(d) for d in f.decorator_list)}
    for call in sketch.calls:
        if (isinstance(call.func, ast.Name) and call.func.id == "hash") or (
                cached and any(id(f) in cached for f in sketch.arrays.callees_of(call.func))):
            yield from call.args
            yield from (keyword.value for keyword in call.keywords)  # the rule checks every argument


def _container(value: ast.expr) -> bool:
    return isinstance(value, (ast.Dict, ast.DictComp, ast.Set, ast.SetComp)) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "set", "frozenset"))


@fact("unhashable_static_argument")
def unhashable_static_argument(sketch: Sketch) -> bool:
    """`eqx.filter_jit(..., static_argnums=...)`; or a function compiled by `jax.jit`/`pmap`
    with static keywords (decorated, assigned, or called inline) called with something that
    may be unhashable."""
    options = [call for call in sketch.calls if keyword(call, *STATIC_KEYWORDS) is not None]
    if any(configures(sketch, call, jax_api.names("filtered_compilers")) for call in options):
        return True
    static = {id(call): call for call in options if configures(sketch, call, jax_api.names("static_compilers"))}
    if not static:
        return False
    modules = any(_may_be_array_module(sketch, c) for classes in sketch.classes.values() for c in classes)
    return any(_may_be_unhashable(sketch, value, modules) for call in sketch.calls
               for value in _static_arguments(call, _static_options_run(sketch, call.func, static)))


# functions an options call may compile, each with its bound parameters (None: unknown)
_Compiled = list[tuple[FunctionNode, int]] | None


def _static_options_run(sketch: Sketch, func: ast.expr,
                        static: dict[int, ast.Call]) -> list[tuple[ast.Call, _Compiled]]:
    """The calls with static keywords that calling `func` may run a function compiled by
    (`jitted_callee`), each with the functions it may compile and how many of their leading
    parameters are bound (None: unknown): the options call itself, or one a name is defined
    under as decorator (directly or through a name assigned it: `@jit_static`) or assigned
    (in the caller's own function, where that binds the name)."""
    if isinstance(func, ast.Call):
        return [(static[id(func)], _compiled(sketch, static[id(func)]))] if id(func) in static else []
    if not isinstance(func, ast.Name):
        return []
    assigned = sketch.assigned(func.id)
    if sketch.reach.binds_locally(func, func.id):  # then only the function's own assignments reach the call
        scope = scope_of(sketch, func)
        assigned = [value for value in assigned if scope_of(sketch, value) is scope]
    found = [(static[id(value)], _compiled(sketch, static[id(value)])) for value in assigned if id(value) in static]
    for function in sketch.defs.get(func.id, ()):
        decorators = list(function.decorator_list)
        decorators += [value for decorator in decorators if isinstance(decorator, ast.Name)
                       for value in sketch.assigned(decorator.id)]
        bound = int(isinstance(sketch.parent(function), ast.ClassDef))  # a method's `self`
        found += [(static[id(decorator)], [(function, bound)]) for decorator in decorators if id(decorator) in static]
    return found


def _compiled(sketch: Sketch, options: ast.Call) -> _Compiled:
    """The functions `jax.jit(f, static_argnums=...)` may compile, with their bound parameters;
    None when the call does not name them (`partial(jax.jit, ...)`)."""
    given = positional(options, 0)
    if given is None or PARTIAL in sketch.qualnames(options.func):
        return None
    return list(sketch.reach.function_targets(given)) or None


def _static_arguments(call: ast.Call, options: list[tuple[ast.Call, _Compiled]]) -> list[ast.expr]:
    """The arguments of `call` that these options may make static (`Jitted.static_arguments`,
    which reads literals only): those at a position `static_argnums` names or that a name of
    `static_argnames` has in the compiled function's signature (any position when the function
    is unknown), and any keyword argument."""
    numbers: set[int] = set()
    named = anywhere = False
    for option, functions in options:
        names, positions = static_options(option, STATIC_KEYWORDS)
        named = named or bool(names)
        anywhere = anywhere or (bool(names) and functions is None)
        numbers |= positions | {index - bound for function, bound in functions or ()
                                for index, name in enumerate(positional_names(function)) if name in names}
    if not (numbers or named):
        return []
    count = len(call.args)
    positional_args = [arg for position, arg in enumerate(call.args)
                       if anywhere or position in numbers or position - count in numbers]
    return positional_args + [given.value for given in call.keywords]


def _may_be_array_module(sketch: Sketch, cls: ast.ClassDef) -> bool:
    """May `_has_array_field` hold: a class that may be a module, with a field that may be declared an array?"""
    return may_be_module_class(sketch, cls) and any(
        isinstance(node, ast.AnnAssign) and sketch.arrays.may_declare_array(node.annotation) for node in walk(cls))


def _may_be_unhashable(sketch: Sketch, value: ast.expr, modules: bool) -> bool:
    """A list, dict or set (or a name assigned one), a value that may be an array, or, when
    the file has a module class that may declare an array field, any value but a literal."""
    if isinstance(value, UNHASHABLE_LITERALS):
        return True
    if isinstance(value, ast.Name) and any(isinstance(v, UNHASHABLE_LITERALS) for v in sketch.assigned(value.id)):
        return True
    if isinstance(value, (ast.Constant, ast.Tuple, ast.Lambda, ast.JoinedStr, ast.Starred)):
        return False
    return modules or sketch.may_be_array(value)


@fact("callable_module_in_control_flow")
def callable_module_in_control_flow(sketch: Sketch) -> bool:
    """A module may be in play, and some function slot of lax control flow gets neither a
    lambda nor a name that only a `def`, a lambda or `functools.partial` binds."""
    if not sketch.may_hold_modules():
        return False
    slots = jax_api.control_flow_slots()
    given = [function for call in sketch.calls_to(slots) for function in _slot_values(sketch, call)]
    plain = only_functions(sketch, {node.id for node in given if isinstance(node, ast.Name)})
    return any(not isinstance(node, ast.Lambda) and not (isinstance(node, ast.Name) and node.id in plain)
               for node in given)


def _slot_values(sketch: Sketch, call: ast.Call) -> list[ast.expr]:
    """What a call of lax control flow passes in its function slots (each branch of a list)."""
    found = []
    for qualname in sketch.qualnames(call.func) & jax_api.control_flow_slots().keys():
        for position, name, _ in jax_api.control_flow_slots()[qualname]:
            value = keyword(call, name) or positional(call, position)
            if isinstance(value, (ast.List, ast.Tuple)) and name == "branches":
                found.extend(value.elts)
            elif value is not None:
                found.append(value)
    return found


@fact("reused_key")
def reused_key(sketch: Sketch) -> bool:
    """A key that may be consumed twice (in one function, with no fresh value between the two
    uses, or again on a loop's next iteration), or a constant key made in a loop that repeats.

    First with each `key=name` outside `jax.random` taken both ways (a key, and the names the
    call passes by position): a cheap answer, with every reuse the exact one finds. Only then
    the exact one, where `_KeyHolders` decides, at the cost of solving the file's keys."""
    calls = _KeyCalls(sketch)
    holds, implicated = _reused(sketch, calls, None)
    return holds and _reused(sketch, calls, _KeyHolders(sketch), implicated)[0]


class _KeyCalls:
    """What both readings of `reused_key` ask of each call, answered once: the names it gives
    by position to a parameter a function of the file consumes, and whether it may consume
    what it is given by position at all."""

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self.consuming = _key_parameters(sketch)
        self._taken: dict[int, list[str]] = {}
        self._may_take: dict[int, bool] = {}

    def taken(self, call: ast.Call) -> list[str]:
        found = self._taken.get(id(call))
        if found is None:
            found = self._taken[id(call)] = _passed_to_key_parameters(self.sketch, call, self.consuming)
        return found

    def may_take(self, call: ast.Call) -> bool:
        """May `KeyUses` find the call consuming a name it is given by position: a `jax.random`
        function, or a function of this file that draws from one of its parameters, by name
        (`taken`) or through a function wrapper (`_passed_by_position` asks `Facts.callee`:
        `jax.jit(step)(state, key)`)? Not `is_prng_key(key)`, an imported function."""
        known = self._may_take.get(id(call))
        if known is None:
            sketch = self.sketch
            known = self._may_take[id(call)] = (
                any(name.startswith("jax.random.") for name in sketch.qualnames(call.func)) or bool(self.taken(call))
                or any(function.name in self.consuming for function in sketch.arrays.callees_of(call.func)))
        return known


def _reused(sketch: Sketch, calls: _KeyCalls, holders: _KeyHolders | None,
            implicated: frozenset[str] = frozenset()) -> tuple[bool, frozenset[str]]:
    """Whether a key may be reused, and the names that may be (with `holders`, only a name the
    cheap reading `implicated` is asked whether it holds a key: no other can be reused)."""
    keys: list[str | None] = []  # the `key=` or first key each call consumes
    consumed: list[list[str]] = []
    for call in sketch.calls:
        given = _key_argument(sketch, call)
        undecided = given is not None and given[1]
        if given is not None and undecided and holders is not None and (
                given[0].id not in implicated or not holders.may_hold(call, given[0])):
            given = None
        key = given[0].id if given is not None else None
        keys.append(key)
        found = [key] if key is not None else []
        if key is None or (undecided and holders is None):
            found += calls.taken(call)
        consumed.append(found)
    names = {name for found in consumed for name in found}  # only these may be reused keys
    uses: dict[tuple[int, str], list[ast.Call]] = {}      # calls a name is given to
    consumers: dict[tuple[int, str], int] = {}
    passed: dict[tuple[int, str], int] = {}  # names given by position (a function may split them)
    for call in sketch.calls if names else ():
        positional = [arg.id for arg in call.args if isinstance(arg, ast.Name) and arg.id in names]
        if not positional or _never_consumes(sketch, call) or not calls.may_take(call):
            continue
        for name in positional:
            where = (_key_scope(sketch, call, name), name)
            passed[where] = passed.get(where, 0) + 1
            uses.setdefault(where, []).append(call)
    strict = "strict-key-reuse" in sketch.options
    suspects: set[tuple[int, str]] = set()
    looped: set[str] = set()
    for call, key, found in zip(sketch.calls, keys, consumed, strict=True):
        for name in found:
            loop = repeating_loop(sketch, call)
            if loop is not None and not rebinds_each_iteration(loop, name) and not bound_before(
                    sketch, loop, call, name):
                looped.add(name)  # consumed again on the next iteration
            where = (_key_scope(sketch, call, name), name)
            consumers[where] = consumers.get(where, 0) + 1
            if key is not None and not any(use is call for use in uses.get(where, ())):
                uses.setdefault(where, []).append(call)  # given as `key=`
            if consumers[where] > 1 or (key is not None and passed.get(where, 0) > 1):
                suspects.add(where)
        made = key is None and any(jax_api.makes_key(name) for name in sketch.qualnames(call.func))
        if made and _constant_args(call):  # a key from a seed
            loop = repeating_loop(sketch, call)
            if loop is not None and _counting(loop) and (strict or _drawn(sketch, call)):
                return True, frozenset()  # no key's name decides this one
    names_met = frozenset(where[1] for where in suspects)
    holds = bool(looped) or any(_meet(sketch, uses[where], where[1], strict) for where in suspects)
    return holds, frozenset(looped) | names_met


def _key_scope(sketch: Sketch, call: ast.Call, name: str) -> int:
    """Where the `name` a call is given lives: the lambda around the call that takes it as a
    parameter (`vmap(lambda key, x: draw(key, x))`), else the `def` around it."""
    current = sketch.parent(call)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(current, ast.Lambda) and name in _bound_by(current):
            return id(current)
        current = sketch.parent(current)
    return id(current)


def _bound_by(function: ast.Lambda) -> set[str]:
    """Every name a lambda's parameters bind, `*args` and `**kwargs` too."""
    return {arg.arg for arg in (*parameters(function), *filter(None, (function.args.vararg, function.args.kwarg)))}


def _drawn(sketch: Sketch, made: ast.Call) -> bool:
    """Might `KeyUses` note a constant key as drawn from (`drawn_constant_keys`, all that is
    reported outside strict mode): given as the key of a `jax.random` call that consumes it,
    directly or through a name it is assigned (any such name of the file)?"""
    holder = sketch.parent(made)
    names = {target.id for target in holder.targets if isinstance(target, ast.Name)} if (
        isinstance(holder, ast.Assign) and holder.value is made) else set()
    for call in sketch.calls:
        given = _key_given(call)
        if (given is made or (isinstance(given, ast.Name) and given.id in names)) and any(
                jax_api.consumes_key(name) for name in sketch.qualnames(call.func)):
            return True
    return False


def _key_given(call: ast.Call) -> ast.expr | None:
    """What `argument_at(call, "key", 0)` finds."""
    return keyword(call, "key") or positional(call, 0)


@fact("not_a_test")
def not_a_test(sketch: Sketch) -> bool:
    """Neither a test module nor a benchmark (`KeyUses.in_test`: a key reused there is deliberate)."""
    from odelint.analysis.project import is_test_or_benchmark

    return not is_test_or_benchmark(sketch.path)


def _meet(sketch: Sketch, calls: list[ast.Call], name: str, strict: bool) -> bool:
    """May two of these calls get the same value of `name`: no assignment of it between them
    (`key, sub = split(key)` between two draws), as `KeyUses` follows a function's statements,
    in a way it reports (outside strict mode, a draw and then a split is deliberate)?"""
    if len(calls) > _PAIRS_JUDGED:
        return True
    ordered = sorted({id(call): call for call in calls}.values(), key=lambda call: (call.lineno, call.col_offset))
    return len(ordered) < len(calls) or any(
        not bound_between(sketch, first, second, name)
        and (strict or not _drawn_then_handed_on(sketch, first, second, name))
        for number, first in enumerate(ordered) for second in ordered[number + 1:])


def _drawn_then_handed_on(sketch: Sketch, first: ast.Call, second: ast.Call, name: str) -> bool:
    """`KeyUses._deliberate`: a key drawn from and then split or passed on, when it does not
    come from a split."""
    return (_use(sketch, first, name) == "draw" and _use(sketch, second, name) in ("split", "pass")
            and not _split_into(sketch, name, second))


def _split_into(sketch: Sketch, name: str, use: ast.Call) -> bool:
    """May `name` hold a split's result when `use` takes it (`KeyUses._from_split`): a split
    assigned to it that ends before `use`, or anywhere when `use` is in a loop (where the
    next iteration sees what the last one assigned)?"""
    looped = sketch.in_loop(use)
    for value in sketch.assigned(name):
        names = sketch.qualnames(value.func) if isinstance(value, ast.Call) else frozenset()
        if not any(jax_api.splits_key(found) for found in names):
            continue
        statement = sketch.parent(value)
        end = (getattr(statement, "end_lineno", None) or 0, getattr(statement, "end_col_offset", None) or 0)
        if looped or end <= (use.lineno, use.col_offset):
            return True
    return False


def _use(sketch: Sketch, call: ast.Call, name: str) -> str | None:
    """How `KeyUses.consumptions` may take `name` from `call`, where every meaning of the callee
    agrees: "split" or "draw" (a `jax.random` function given it as its key), "pass" (a call
    outside `jax.random`), or None."""
    names = sketch.qualnames(call.func)
    if not any(found.startswith("jax.random.") for found in names):
        return "pass"
    given = _key_given(call)
    if not (isinstance(given, ast.Name) and given.id == name) or not all(
            found.startswith("jax.random.") for found in names):
        return None
    if all(jax_api.splits_key(found) for found in names):
        return "split"
    return "draw" if all(jax_api.consumes_key(found) and not jax_api.splits_key(found) for found in names) else None


def _never_consumes(sketch: Sketch, call: ast.Call) -> bool:
    """A call `KeyUses` never finds consuming a key it is given by position: a Python builtin
    the file does not shadow (`isinstance(key, int)`, `print(key)`), or a `jax.random`
    function that takes no key (`jax.random.PRNGKey(seed)`)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in _BUILTINS and not sketch.binds(func.id):
        return True
    names = sketch.qualnames(func)
    return bool(names) and all(name.startswith("jax.random.") and not jax_api.consumes_key(name) for name in names)


_BUILTINS = frozenset(dir(builtins))
_PAIRS_JUDGED = 40  # uses of one name in one function beyond which the pre-check just says "maybe"


def _key_parameters(sketch: Sketch) -> dict[str, set[int]]:
    """For each function name of the file: the positions of parameters a `jax.random` call in
    its body splits, draws from or folds data into (the pre-check's view of
    `KeyUses._parameters_consumed`: a caller passing a key there consumes it)."""
    found: dict[str, set[int]] = {}
    for function, name in _draws(sketch):
        if function is not None and name in (parameters := positional_names(function)):
            found.setdefault(function.name, set()).add(parameters.index(name))
    return found


def _draws(sketch: Sketch) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef | None, str]]:
    """(the `def` around, the name) for each name a `jax.random` call splits, draws from or
    folds data into, given as `key=` or first (`KeyUses._parameters_consumed`)."""
    for call in sketch.calls:
        if any(jax_api.consumes_key(name) or jax_api.derives_key(name) for name in sketch.qualnames(call.func)):
            for given in {keyword(call, "key"), positional(call, 0)}:
                if isinstance(given, ast.Name):
                    yield sketch.enclosing_function(call), given.id


def _passed_to_key_parameters(sketch: Sketch, call: ast.Call, consuming: dict[str, set[int]]) -> list[str]:
    """Names a call gives by position to a parameter that a function of that name consumes (or
    the function a wrapper's call runs: `jax.vmap(draw)(x, keys)`). Where a method has the name,
    its `self` shifts the position by one, and both are taken, except for a call on `self` of a
    name that only methods bound to their instance carry (`self.step(key, params)`); a plain
    function's positions are its own."""
    if not consuming:  # no function of the file consumes a parameter (most files)
        return []
    func = call.func
    if isinstance(func, ast.Call):  # `jax.vmap(draw, in_axes=...)(x, keys)`: the wrapped function's positions
        taken = {position for function in sketch.arrays.callees_of(func)
                 for position in consuming.get(function.name, ())}
        return [arg.id for position, arg in enumerate(call.args) if isinstance(arg, ast.Name) and position in taken]
    if not isinstance(func, (ast.Name, ast.Attribute)):
        return []
    name = func.id if isinstance(func, ast.Name) else func.attr
    positions = consuming.get(name, set())
    if not positions:
        # `step = jax.jit(train_step)`, `self.step = partial(train_step, config)`: `Facts.callee`
        # follows the wrapper to the function, with positions a partial may shift
        wrapped = sketch.assigned(name) if isinstance(func, ast.Name) else sketch.assigned_attribute(name)
        if any(sketch.names_in(value) & consuming.keys() for value in wrapped):
            return [arg.id for arg in call.args if isinstance(arg, ast.Name)]
        return []
    bound = (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
             and _only_instance_methods(sketch, func.attr))
    shifted = any(isinstance(sketch.parent(function), ast.ClassDef) for function in sketch.defs.get(name, ()))
    return [arg.id for position, arg in enumerate(call.args) if isinstance(arg, ast.Name)
            and ((position in positions and not bound) or (shifted and position + 1 in positions))]


def _only_instance_methods(sketch: Sketch, name: str) -> bool:
    """Is every function of this name in the file a plain method, undecorated (a decorator's
    object may not bind to the instance), so that `self.name(a, b)` passes `a` second?"""
    return all(isinstance(sketch.parent(function), ast.ClassDef) and not function.decorator_list
               for function in sketch.defs.get(name, ()))


def _key_argument(sketch: Sketch, call: ast.Call) -> tuple[ast.Name, bool] | None:
    """The name whose key a call may consume (the pre-check's view of `KeyUses.consumed_key`),
    and whether that depends on what the name holds: outside `jax.random`, `key=name` consumes
    only a name that may hold a key (`_KeyHolders`)."""
    for given in call.keywords:
        if given.arg == "key" and isinstance(given.value, ast.Name):
            return given.value, not any(name.startswith("jax.random.") for name in sketch.qualnames(call.func))
    if call.args and isinstance(call.args[0], ast.Name) and any(
            jax_api.consumes_key(name) for name in sketch.qualnames(call.func)):
        return call.args[0], False
    return None


class _KeyHolders:
    """Which names `KeyUses` takes for keys where a call outside `jax.random` is given them as
    `key=`: those `Facts.kind` may find a key (`SketchArrays.may_be_array_or_key`), and those
    a `jax.random` call in the same function consumes or derives from (`_parameters_consumed`)."""

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._drawn: dict[int, set[str]] | None = None

    def may_hold(self, call: ast.Call, name: ast.Name) -> bool:
        if self._drawn is None:
            self._drawn = {}
            for function, drawn in _draws(self.sketch):
                self._drawn.setdefault(id(function), set()).add(drawn)
        return (name.id in self._drawn.get(id(self.sketch.enclosing_function(call)), ())
                or self.sketch.arrays.may_be_array_or_key(name))


def _constant_args(call: ast.Call) -> bool:
    """Might `keys._constant` find every argument constant (numbers and strings, signed)?"""
    return all(_constant(value) for value in (*call.args, *(keyword.value for keyword in call.keywords)))


def _constant(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    return isinstance(node, (ast.Constant, ast.JoinedStr))


def _counting(loop: ast.AST) -> bool:
    """Might `KeyUses._counting` find the loop repeating one computation: a `while`, or a loop
    over `range`/`enumerate`/`zip` (whose arguments it goes on to check)?"""
    if isinstance(loop, ast.While):
        return True
    iterable = loop.generators[0].iter if not isinstance(loop, (ast.For, ast.AsyncFor)) else loop.iter  # type: ignore[attr-defined]
    return isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and \
        iterable.func.id in ("range", "enumerate", "zip")


@fact("stateful_random_in_traced")
def stateful_random_in_traced(sketch: Sketch) -> bool:
    """Code that may run traced draws from NumPy's or Python's generator, or from a key made
    outside it."""
    stateful = tuple(jax_api.names("stateful_random"))
    for call in sketch.nodes_in(sketch.traced_functions(), ast.Call):
        names = sketch.qualnames(call.func)
        if any(name.startswith(stateful) for name in names):
            return True
        if any(jax_api.consumes_key(name) for name in names) and _key_from_outside(sketch, call):
            return True
    return False


def _key_from_outside(sketch: Sketch, call: ast.Call) -> bool:
    """May the call's key (`key=` or first) be a name its own scope does not bind, bound where
    the code may run untraced (`_outside_key`)?"""
    given = [keyword.value for keyword in call.keywords if keyword.arg == "key"]
    if call.args and not isinstance(call.args[0], ast.Starred):
        given.append(call.args[0])
    return any(isinstance(key, ast.Name) and not sketch.reach.binds_locally(call, key.id)
               and not _bound_in_traced_code(sketch, call, key.id) for key in given)


def _bound_in_traced_code(sketch: Sketch, node: ast.AST, name: str) -> bool:
    """Is the scope that binds `name` for `node` (the nearest around it, class bodies aside)
    surely traced (`SketchReach.surely_traced`)? Then `_outside_key` finds no key from outside."""
    scope = scope_of(sketch, node)
    while scope is not None:
        scope = scope_of(sketch, scope)
        if scope is not None and not isinstance(scope, ast.ClassDef) and sketch.reach.binds_in(scope, name):
            return sketch.reach.surely_traced(scope)
    return False


@fact("compiled_repeatedly")
def compiled_repeatedly(sketch: Sketch) -> bool:
    """A function may be compiled again and again: a transform applied in a loop (or in a
    function called in one), or a loop's Python number given to a filtered transform."""
    if sketch.has_loops and sketch.refers_to(*jax_api.names("filtered_compilers")):
        return True  # a Python number of a loop passed to a filter_jit function
    for call in sketch.calls_to(COMPILING):
        if call.args and isinstance(call.args[0], (ast.Lambda, ast.Call, ast.Name)) and sketch.repeats(call):
            return True
    return any(sketch.repeats(function) for function in sketch.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
               if any(sketch.qualnames(node) & COMPILING for decorator in function.decorator_list
                      for node in walk(decorator) if isinstance(node, (ast.Name, ast.Attribute))))


@fact("module_field_assigned")
def module_field_assigned(sketch: Sketch) -> bool:
    """`name.field = ...` (or `+=`) where the name may hold a module; or `self.field = ...` in
    the `__init__` of a class that may be a module, the field not declared in its body."""
    if not sketch.may_hold_modules():
        return False
    owners: set[str] = set()
    rebound: dict[int, set[str]] = {}
    methods = _InitialisingMethods(sketch)
    for target in _targets(sketch):
        if not isinstance(target.value, ast.Name):
            continue
        initialising = _initialising(sketch, target, rebound, methods)
        if initialising is None:
            own = _own_instance(sketch, target, rebound)
            if own is None:
                owners.add(target.value.id)
            elif may_be_module_class(sketch, own):
                return True
        elif _undeclared(sketch, target, *initialising) and may_be_module_class(sketch, initialising[1]):
            return True
    called = called_names(sketch)
    return any(may_name_module(sketch, owner, called) for owner in owners)


def _initialising(sketch: Sketch, target: ast.Attribute, rebound: dict[int, set[str]],
                  methods: _InitialisingMethods) -> tuple[ast.FunctionDef, ast.ClassDef] | None:
    """The initialising method (`__init__`, `__post_init__`, or a method only they call) and its
    class, when `target` is `<instance>.field` directly in one (the method's first parameter,
    never rebound there). `ModuleMutation` lets such a method set its class's fields; in `__init__`
    it reports only a field the class does not declare, and only when the class is a module."""
    statement = sketch.parent(target)
    method = sketch.parent(statement) if statement is not None else None
    while method is not None and not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                                         ast.ClassDef)):
        method = sketch.parent(method)
    if not isinstance(method, ast.FunctionDef) or not isinstance(target.value, ast.Name):
        return None
    cls = sketch.parent(method)
    if not isinstance(cls, ast.ClassDef) or method.name not in methods.of(cls):
        return None
    arguments = [*method.args.posonlyargs, *method.args.args]
    if id(method) not in rebound:  # the names the method binds, found once per method
        rebound[id(method)] = {node.id for node in walk(method)
                               if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    if not arguments or arguments[0].arg != target.value.id or target.value.id in rebound[id(method)]:
        return None  # not the instance, or a name rebound in the method
    return method, cls


def _own_instance(sketch: Sketch, target: ast.Attribute, rebound: dict[int, set[str]]) -> ast.ClassDef | None:
    """The class of the method whose own instance `target` assigns to: `self.field = ...` in
    the method's body, `self` unannotated and not rebound there. `Facts.kind` finds such a
    `self` a module exactly when its class is one (`_method_class_of_self`). None for any
    other target."""
    owner = cast(ast.Name, target.value)
    method = sketch.enclosing_function(target)
    cls = sketch.parent(method) if method is not None else None
    if method is None or not isinstance(cls, ast.ClassDef) or scope_of(sketch, target) is not method:
        return None
    arguments = [*method.args.posonlyargs, *method.args.args]
    if not arguments or arguments[0].arg != owner.id or arguments[0].annotation is not None or any(
            isinstance(decorator, ast.Name) and decorator.id in ("staticmethod", "classmethod")
            for decorator in method.decorator_list):
        return None
    if id(method) not in rebound:
        rebound[id(method)] = {node.id for node in walk(method)
                               if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    return None if owner.id in rebound[id(method)] else cls


class _InitialisingMethods:
    """`initialising_methods` on the sketch: `__init__`, `__post_init__`, and the methods of a
    class that only they call on `self` (directly or through other such methods; from a
    method's own body, lambdas and comprehensions included), the calls filed once per file."""

    def __init__(self, sketch: Sketch) -> None:
        self.sketch = sketch
        self._callers: dict[int, dict[str, set[str]]] | None = None  # class -> method -> its callers on self
        self._found: dict[int, frozenset[str]] = {}

    def of(self, cls: ast.ClassDef) -> frozenset[str]:
        found = self._found.get(id(cls))
        if found is None:
            found = self._found[id(cls)] = self._close(cls)
        return found

    def _close(self, cls: ast.ClassDef) -> frozenset[str]:
        defined = {item.name for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return initialisers_closed(self._filed().get(id(cls), {}), defined)

    def _filed(self) -> dict[int, dict[str, set[str]]]:
        if self._callers is None:
            self._callers = {}
            for call in self.sketch.calls:
                func = call.func
                if not (type(func) is ast.Attribute and type(func.value) is ast.Name and func.value.id == "self"):
                    continue
                scope = scope_of(self.sketch, call)
                while isinstance(scope, (ast.Lambda, *COMPREHENSIONS)):  # they run in the method
                    scope = scope_of(self.sketch, scope)
                if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    cls = scope_of(self.sketch, scope)
                    if isinstance(cls, ast.ClassDef):
                        self._callers.setdefault(id(cls), {}).setdefault(func.attr, set()).add(scope.name)
        return self._callers


def _undeclared(sketch: Sketch, target: ast.Attribute, method: ast.FunctionDef, cls: ast.ClassDef) -> bool:
    """`self.field = ...` in `__init__` with the field not annotated in the class body (`+=`, and
    anything in `__post_init__`, is left alone)."""
    return method.name == "__init__" and isinstance(sketch.parent(target), ast.Assign) and not any(
        isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.target.id == target.attr
        for item in cls.body)


def _targets(sketch: Sketch) -> list[ast.Attribute]:
    """The `name.attr` targets of single-target assignments and augmented assignments."""
    found = [node.targets[0] for node in sketch.of_type(ast.Assign) if len(node.targets) == 1]
    found += [node.target for node in sketch.of_type(ast.AugAssign)]
    return [t for t in found if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)]


@fact("transform_stored_in_init")
def transform_stored_in_init(sketch: Sketch) -> bool:
    """`self.field = T(...)` directly in the `__init__` of a class that may be a module, `T` a
    transform whose result is no pytree (`jax.vmap`, `jax.jit`, ...: `stored_transforms`)."""
    for call in sketch.calls_to(jax_api.names("stored_transforms")):
        statement = sketch.parent(call)
        if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
            continue
        target = statement.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self"):
            continue
        method = sketch.enclosing_function(statement)
        cls = sketch.parent(method) if method is not None and method.name == "__init__" else None
        if isinstance(cls, ast.ClassDef) and may_be_module_class(sketch, cls):
            return True
    return False


@fact("static_array_field")
def static_array_field(sketch: Sketch) -> bool:
    """A static field of a class that may be a module, annotated with what may be an array
        or key, or assigned one in `__init__`."""
    return any(_may_be_static(sketch, node) and _may_hold_array(sketch, node)
               for node in sketch.of_type(ast.AnnAssign))


def _may_be_static(sketch: Sketch, node: ast.AnnAssign) -> bool:
    """`name: T = eqx.static_field()` or `= eqx.field(..., static=True)`."""
    value = node.value
    if not (isinstance(node.target, ast.Name) and isinstance(value, ast.Call)):
        return False
    names = sketch.qualnames(value.func)
    static = keyword(value, "static")
    return jax_api.name("static_field") in names or (
        jax_api.name("field") in names and isinstance(static, ast.Constant) and static.value is True)


def _may_hold_array(sketch: Sketch, node: ast.AnnAssign) -> bool:
    """In the body of a class that may be a module, with an annotation that may declare an
    array or key, or an `__init__` that may assign the field one (`Facts.init_assignments`:
    `<name>.<field> = value` among its own statements)."""
    cls = enclosing_class(sketch, node)
    if cls is None or not may_be_module_class(sketch, cls):
        return False
    if sketch.arrays.may_declare(node.annotation, "array", "key"):
        return True
    field = node.target.id if isinstance(node.target, ast.Name) else None  # a name (`_may_be_static`)
    return any(sketch.arrays.may_be_array_or_key(value) for name, value in init_assignments(cls) if name == field)


@fact("float64_without_x64")
def float64_without_x64(sketch: Sketch) -> bool:
    """A 64-bit request in a file that does not name the flag, or a switch after a call that may
        create an array in the same function (or at the top level)."""
    if not _names_flag(sketch) and any(_may_request(sketch, call) for call in sketch.calls):
        return True
    return any(_may_switch_late(sketch, call) for call in sketch.calls)


def _names_flag(sketch: Sketch) -> bool:
    """Does the file surely name the flag as `_mentioned` sees it (a string or attribute)?"""
    flag = jax_api.name("x64_flag")
    return (any(node.attr == flag for node in sketch.of_type(ast.Attribute))
            or any(isinstance(node.value, str) and node.value.lower() == flag
                   and exact_string(sketch, node) is not None for node in sketch.of_type(ast.Constant)))


def _may_request(sketch: Sketch, call: ast.Call) -> bool:
    """`jnp.float64(x)`, a 64-bit `dtype=` of a call that may make an array, or `.astype` of
    a value that may be an array."""
    names = sketch.qualnames(call.func)
    if names & jax_api.names("wide_constructors"):
        return True
    dtype = keyword(call, "dtype")
    if dtype is not None and _may_be_wide(sketch, dtype) and any(jax_api.returns_array(name) for name in names):
        return True
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "astype"):
        return False
    dtype = dtype if dtype is not None else positional(call, 0)
    return dtype is not None and _may_be_wide(sketch, dtype) and sketch.may_be_array(call.func.value)


def _may_be_wide(sketch: Sketch, node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in jax_api.names("wide_dtype_names")
    return bool(sketch.qualnames(node) & jax_api.names("wide_dtypes"))


def _may_switch_late(sketch: Sketch, call: ast.Call) -> bool:
    """`jax.config.update("jax_enable_x64", ...)` not surely switching off, after (or around) a
    call of the same function that may create an array: LibCST visits in source order."""
    if jax_api.name("config_update") not in sketch.qualnames(call.func):
        return False
    name, value = positional(call, 0), positional(call, 1)
    if not (isinstance(name, ast.Constant) and name.value == jax_api.name("x64_flag")) or (
            isinstance(value, ast.Constant) and value.value is False):
        return False
    where, end = sketch.enclosing_function(call), (call.end_lineno, call.end_col_offset)
    return any((made.lineno, made.col_offset) < end and sketch.enclosing_function(made) is where
               and any(jax_api.returns_array(name) for name in sketch.qualnames(made.func))
               for made in sketch.calls)


@fact("norm_at_zero")
def norm_at_zero(sketch: Sketch) -> bool:
    """A norm or square root in code that may be differentiated whose argument may be a
    pairwise difference (or the sum of its squares) or a parameter some call may fill with
    zeros (`zero_filled_parameter`); or a name assigned a norm and then compared
    (`tested_for_zero`)."""
    norms = frozenset(jax_api.norm_functions())
    for call in sketch.nodes_in(sketch.differentiated_functions(), ast.Call):
        if not sketch.qualnames(call.func) & norms or not call.args or isinstance(call.args[0], ast.Starred):
            continue
        argument = call.args[0]
        if _may_hold_pairwise(sketch, argument) or (
                isinstance(argument, ast.Name) and _may_be_zeros(sketch, argument, frozenset(), 0)):
            return True
    return any(isinstance(operand, ast.Name) and any(
        isinstance(value, ast.Call) and sketch.qualnames(value.func) & norms for value in sketch.bound(operand.id))
        for compare in sketch.of_type(ast.Compare) for operand in (compare.left, *compare.comparators))


def _may_hold_pairwise(sketch: Sketch, argument: ast.expr) -> bool:
    """May a norm's argument be a pairwise difference (`pairwise_difference`), or a root's the
    sum of its squares (`squared_pairwise_difference`: `jnp.sum(d ** 2)`, `(d * d).sum()`,
    `jnp.sum(jnp.square(d))`)?"""
    if _may_be_pairwise(sketch, argument, 0):
        return True
    if not isinstance(argument, ast.Call):
        return False
    summed = [*argument.args[:1], *([argument.func.value] if isinstance(argument.func, ast.Attribute) else [])]
    return any((isinstance(value, ast.BinOp) and _may_be_pairwise(sketch, value.left, 0)) or (
        isinstance(value, ast.Call) and bool(value.args) and _may_be_pairwise(sketch, value.args[0], 0))
        for value in summed)


def _may_be_pairwise(sketch: Sketch, node: ast.expr, depth: int) -> bool:
    """`x[:, None] - x[None, :]` (a difference with an axis added by `None` on a side), or a name
    assigned one, as deep as `pairwise_difference` follows names."""
    if isinstance(node, ast.Name):
        return depth <= 3 and any(_may_be_pairwise(sketch, value, depth + 1) for value in sketch.bound(node.id))
    return isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and any(
        isinstance(side, ast.Subscript) and any(isinstance(index, ast.Constant) and index.value is None
                                                for index in walk(side.slice))
        for side in (node.left, node.right))


def _may_be_zeros(sketch: Sketch, value: ast.expr, seen: frozenset[str], depth: int) -> bool:
    """May `built_by` find `value` built by a call making an array of zeros (`jnp.zeros(3)`): the
    call itself, through what a name is assigned, or, for a name that is a parameter of a
    function of the file, through what the calls of that function pass?"""
    if depth > 4:
        return True
    if isinstance(value, ast.Call):
        return bool(sketch.qualnames(value.func) & jax_api.names("zero_arrays"))
    if not isinstance(value, ast.Name) or value.id in seen:
        return False
    seen = seen | {value.id}
    if any(_may_be_zeros(sketch, bound, seen, depth + 1) for bound in sketch.bound(value.id)):
        return True
    return any(value.id in positional_names(function) and any(
        _may_be_zeros(sketch, given.value if isinstance(given, ast.Starred) else given, seen, depth + 1)
        for call in sketch.reach.calls_of(function) for given in (*call.args, *(k.value for k in call.keywords)))
        for functions in sketch.defs.values() for function in functions)


@fact("where_nan_gradient")
def where_nan_gradient(sketch: Sketch) -> bool:
    """A `jnp.where` whose guard compares a variable with a number, and a branch applying a
    singular function to that variable at inputs the guard deselects."""
    return any(_may_flag(sketch, call) for call in sketch.calls_to(jax_api.names("where")))


def _may_flag(sketch: Sketch, call: ast.Call) -> bool:
    """`visit_Call` on `ast`: three positional arguments, a guard comparing a variable with a
    number, and a branch applying a singular function to that variable (`_singular_uses`, by
    dotted name) at inputs the guard deselects (the guard's regions are `intervals.guard`'s)."""
    if len(call.args) != 3 or call.keywords or any(isinstance(arg, ast.Starred) for arg in call.args):
        return False
    test = call.args[0]
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    left, right = test.left, test.comparators[0]
    variable = (_dotted(left) if literals.ast_number(right) is not None
                else _dotted(right) if literals.ast_number(left) is not None else None)
    if variable is None:
        return False
    regions = None
    for position in (1, 2):
        branch = call.args[position]
        values = [branch, *(sketch.assigned(branch.id) if isinstance(branch, ast.Name) else ())]
        for function, inputs in (use for value in values for use in _sketch_singular_uses(sketch, value)):
            if variable in (_dotted(value) for value in inputs):
                regions = regions or guard(cst.parse_expression(ast.unparse(test)))  # `x OP c`: parses
                if regions is None:
                    return False
                deselected = regions[3] if position == 1 else regions[2]
                if any(region.meets(low, high) for region in deselected for low, high in function.bad):
                    return True
    return False


def _sketch_singular_uses(sketch: Sketch, node: ast.AST) -> Iterator[tuple[jax_api.Singular, list[ast.expr]]]:
    """`_singular_uses` on `ast`, for every meaning a function's name may have; inner
    `jnp.where` calls are entered (the rule may not know them for one)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Lambda):
            continue
        if isinstance(current, ast.Call) and not any(isinstance(arg, ast.Starred) for arg in current.args) and not any(
                keyword.arg is None for keyword in current.keywords):
            args = current.args
            for function in filter(None, map(jax_api.singular, sketch.qualnames(current.func))):
                exponent = function.exponent
                if exponent is None or (exponent < len(args) and _sketch_power(args[exponent]) is not None):
                    yield function, [args[i] for i in function.arguments if i < len(args)]
        elif isinstance(current, ast.BinOp) and isinstance(current.op, ast.Div):
            yield jax_api.DIVISION, [current.right]
        elif isinstance(current, ast.BinOp) and isinstance(current.op, ast.Mult):
            for factor, other in ((current.left, current.right), (current.right, current.left)):
                if any(jax_api.infinite(qualname) for qualname in sketch.qualnames(factor)):
                    yield jax_api.INFINITE_FACTOR, [other]
        elif isinstance(current, ast.BinOp) and isinstance(current.op, ast.Pow):
            power = _sketch_power(current.right)
            if power is not None:
                yield power, [current.left]
        stack.extend(children(current))


def _sketch_power(exponent: ast.expr) -> jax_api.Singular | None:
    """`_power` on `ast`."""
    if isinstance(exponent, ast.BinOp) and isinstance(exponent.op, ast.Div):
        numerator, denominator = literals.ast_number(exponent.left), literals.ast_number(exponent.right)
        return jax_api.power_singular(numerator / denominator if numerator is not None and denominator else None)
    return jax_api.power_singular(literals.ast_number(exponent))


def _dotted(node: ast.expr) -> str | None:
    """`scopes.dotted_name` on `ast`: `a.b.c` as text, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


@fact("discarded_at_update")
def discarded_at_update(sketch: Sketch) -> bool:
    """An expression statement that is a functional `.at[...]` update (ODL712)."""
    return any(at_update_statement(statement) for statement in sketch.of_type(ast.Expr))


@fact("tree_map_update")
def tree_map_update(sketch: Sketch) -> bool:
    """A tree map without `is_leaf` and with no `*args` (ODL205's `_mapped_trees`) that maps
    two trees or more (`tree_map(f, model, grads)`), or one tree as the value of a plain
    assignment (`model = tree_map(f, eqx.filter(model, ...))`)."""
    for call in sketch.calls_to(jax_api.tree_maps()):
        if keyword(call, "is_leaf") is not None or any(isinstance(arg, ast.Starred) for arg in call.args):
            continue
        statement = sketch.parent(call)
        if len(call.args) >= 3 or (len(call.args) == 2 and isinstance(statement, ast.Assign)
                                   and statement.value is call and len(statement.targets) == 1):
            return True
    return False


@fact("stop_gradient_on_field")
def stop_gradient_on_field(sketch: Sketch) -> bool:
    """ODL206's two shapes, where a module may be in play: `self.field = stop_gradient(...)` in
    an `__init__` of a class that may be a module, or `stop_gradient(self.field)` (argument `x`)
    in a file that calls some `<optimiser>.init(...)`."""
    if not sketch.may_hold_modules():
        return False
    calls = sketch.calls_to([STOP_GRADIENT])
    if not calls:
        return False
    inits = any(type(call.func) is ast.Attribute and call.func.attr == "init" for call in sketch.calls)
    for call in calls:
        given = keyword(call, "x") or positional(call, 0)
        if inits and _self_attribute(given):
            return True
        statement = sketch.parent(call)
        if not (type(statement) is ast.Assign and statement.value is call and len(statement.targets) == 1
                and _self_attribute(statement.targets[0])):
            continue
        function = sketch.enclosing_function(call)
        cls = enclosing_class(sketch, function) if function is not None and function.name == "__init__" else None
        if cls is not None and may_be_module_class(sketch, cls):
            return True
    return False


def _self_attribute(node: ast.expr | None) -> bool:
    return type(node) is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self"


@fact("differentiated_code")
def differentiated_code(sketch: Sketch) -> bool:
    """Some function of the file may run under differentiation (ODL713)."""
    return bool(sketch.differentiated_functions())
