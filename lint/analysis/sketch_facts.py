"""Named facts of the Sketch that a rule's declared needs ask (`Needs.fact("traced_print")`):
questions over CPython's `ast` too particular for a word of odelint.analysis.needs, kept with
the model (never in a rule) and, like every Sketch answer, erring towards "maybe"."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from odelint.analysis import jax_api
from odelint.analysis.jitted import STATIC_KEYWORDS
from odelint.analysis.sketch import Sketch
from odelint.analysis.sketch_calls import (
    UNHASHABLE_LITERALS, configures, keyword, may_be_module_class, only_defined, positional,
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
    traced, in code that may run traced."""
    return any(sketch.reach.may_be_traced(value)
               for node in sketch.nodes_in(sketch.traced_functions(), *_TRUTH_TESTS)
               for value in _tested_values(node))


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
    return any(sketch.may_be_array(value) or sketch.arrays.may_be_traced(value) for value in _hashed_values(sketch))


def _hashed_values(sketch: Sketch) -> Iterator[ast.expr]:
    """What the file may hash (the pre-check's view): dict keys, set members, `hash()`
    arguments, keys looked up in dicts or sets, arguments of calls that may run a cached
    function (`Facts.callee`: by name, or through a wrapper such as `jax.jit(cached)`)."""
    for node in sketch.of_type(ast.Dict):
        yield from (key for key in node.keys if key is not None)  # type: ignore[attr-defined]
    for node in sketch.of_type(ast.Set):
        yield from node.elts  # type: ignore[attr-defined]
    containers = {name for name in sketch.identifiers if any(_container(v) for v in sketch.assigned(name))}
    for node in sketch.of_type(ast.Subscript):
        base = node.value  # type: ignore[attr-defined]
        if isinstance(base, (ast.Dict, ast.DictComp)) or (isinstance(base, ast.Name) and base.id in containers):
            yield node.slice  # type: ignore[attr-defined]
    for node in sketch.of_type(ast.Compare):
        left = node.left  # type: ignore[attr-defined]
        for operator, right in zip(node.ops, node.comparators):  # type: ignore[attr-defined]
            if isinstance(operator, (ast.In, ast.NotIn)) and (
                    _container(right) or (isinstance(right, ast.Name) and right.id in containers)):
                yield left
            left = right
    cached = {id(f) for f in sketch.of_type(ast.FunctionDef, ast.AsyncFunctionDef)
              if any("cache" in sketch.names_in(d) or "lru_cache" in sketch.names_in(d) for d in f.decorator_list)}  # type: ignore[attr-defined]
    for call in sketch.calls:
        if (isinstance(call.func, ast.Name) and call.func.id == "hash") or (
                cached and any(id(f) in cached for f in sketch.arrays.callees_of(call.func))):
            yield from call.args
            yield from (keyword.value for keyword in call.keywords)  # the rule checks every argument


def _container(value: ast.expr) -> bool:
    return isinstance(value, (ast.Dict, ast.DictComp, ast.Set, ast.SetComp)) or (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in ("dict", "set", "frozenset"))


@fact("unhashable_static_argument")
def unhashable_static_argument(sketch: Sketch) -> bool:
    """`eqx.filter_jit(..., static_argnums=...)`; or a function compiled by `jax.jit`/`pmap`
    with static keywords (decorated, assigned, or called inline) called with something that
    may be unhashable."""
    options = [call for call in sketch.calls if keyword(call, *STATIC_KEYWORDS) is not None]
    if any(configures(sketch, call, jax_api.names("filtered_compilers")) for call in options):
        return True
    static = {id(call) for call in options if configures(sketch, call, jax_api.names("static_compilers"))}
    if not static:
        return False
    modules = any(_may_be_array_module(sketch, c) for classes in sketch.classes.values() for c in classes)
    return any(_may_be_unhashable(sketch, value, modules) for call in sketch.calls
               if _may_call_static(sketch, call.func, static)
               for value in (*call.args, *(given.value for given in call.keywords)))


def _may_call_static(sketch: Sketch, func: ast.expr, static: set[int]) -> bool:
    """Does calling `func` run a function compiled with static keywords (`jitted_callee`): the
    options call itself, or a name defined under one as decorator or assigned one?"""
    if isinstance(func, ast.Call):
        return id(func) in static
    if not isinstance(func, ast.Name):
        return False
    return (any(id(value) in static for value in sketch.assigned(func.id))
            or any(id(decorator) in static for function in sketch.defs.get(func.id, ())
                   for decorator in function.decorator_list))


def _may_be_array_module(sketch: Sketch, cls: ast.ClassDef) -> bool:
    """May `_has_array_field` hold: a class that may be a module, with a field that may be declared an array?"""
    return may_be_module_class(sketch, cls) and any(
        isinstance(node, ast.AnnAssign) and sketch.arrays.may_declare_array(node.annotation) for node in ast.walk(cls))


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
    lambda nor a name that only a `def` binds."""
    if not sketch.may_hold_modules():
        return False
    given = [function for call in sketch.calls_to(jax_api.control_flow_slots()) for function in _slot_values(sketch, call)]
    plain = only_defined(sketch, {node.id for node in given if isinstance(node, ast.Name)})
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
