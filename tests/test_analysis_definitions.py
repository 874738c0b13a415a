"""What names are defined as, as rules ask it (`facts.definitions`, `facts.passed_for`, ...):
the model's answers about names, which stand in for the scope index's bindings and scopes."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from odelint.analysis import DefinedAs, Definition, declared_fields
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site, build_scope_index


class Program:
    def __init__(self, source: str, path: str | None = None) -> None:
        self.module = cst.parse_module(textwrap.dedent(source))
        self.index = build_scope_index(self.module, {cst.Call, cst.Name, cst.FunctionDef, cst.ClassDef, cst.Lambda})
        self.facts = Facts(self.index, path)

    def code(self, node: cst.CSTNode | None) -> str | None:
        return self.module.code_for_node(node) if node is not None else None

    def function(self, name: str) -> cst.FunctionDef:
        return next(node for node, _ in self.index.of_type(cst.FunctionDef) if node.name.value == name)

    def cls(self, name: str) -> cst.ClassDef:
        return next(node for node, _ in self.index.of_type(cst.ClassDef) if node.name.value == name)

    def names(self, text: str) -> list[tuple[cst.Name, Site]]:
        """Every `Name` node spelled `text`, with its site, in source order."""
        return [(node, site) for node, site in self.index.of_type(cst.Name) if node.value == text]

    def read(self, text: str, occurrence: int = -1) -> tuple[cst.Name, Site]:
        return self.names(text)[occurrence]


NAMES = """
import jax.numpy as jnp
from equinox import Module

def step(model, x: jnp.ndarray, *args, scale=1.0, **kwargs):
    total = x
    total += 1
    a, (b, c) = x, (1, 2)
    p, q = make()
    for i in range(3):
        print(i)
    with open("f") as handle:
        pass
    y = (z := 2)
    return model, x, args, kwargs, scale, total, a, b, c, p, q, i, handle, y, z

class Net(Module):
    width: int
    depth = 2

    def __call__(self, v):
        return width

width = 3
"""


def test_each_kind_of_definition_and_what_it_says() -> None:
    program = Program(NAMES)
    facts = program.facts
    last = program.read("model")[1]  # the `return` at the end of `step`

    def what(name: str) -> DefinedAs:
        found = facts.definitions(name, last)
        return found[-1].what

    assert {name: what(name) for name in ("model", "x", "args", "kwargs", "scale", "total", "a", "b", "p", "i",
                                          "handle", "y", "z", "jnp", "Module", "step", "Net")} == {
        "model": DefinedAs.PARAMETER, "x": DefinedAs.PARAMETER, "args": DefinedAs.VARIADIC,
        "kwargs": DefinedAs.VARIADIC, "scale": DefinedAs.PARAMETER, "total": DefinedAs.OTHER,
        "a": DefinedAs.ASSIGNMENT, "b": DefinedAs.ASSIGNMENT, "p": DefinedAs.ASSIGNMENT, "i": DefinedAs.LOOP,
        "handle": DefinedAs.OTHER, "y": DefinedAs.ASSIGNMENT, "z": DefinedAs.ASSIGNMENT,
        "jnp": DefinedAs.IMPORT, "Module": DefinedAs.IMPORT, "step": DefinedAs.FUNCTION, "Net": DefinedAs.CLASS}
    # parameters: their function, position (keyword-only: none) and annotation, read outside the body
    x = facts.definition("x", last)
    assert x is not None and x.function is program.function("step") and x.position == 1
    assert program.code(x.annotation) == "jnp.ndarray"
    assert facts.qualname(x.annotation, x.annotation_site.scope) == "jax.numpy.ndarray"  # type: ignore[arg-type]
    assert facts.definition("scale", last).position is None  # type: ignore[union-attr]
    # assignments: a plain one has a value, an unpacked one its right-hand side and position
    total = facts.definitions("total", last)  # `total = x`, then `total += 1`
    assert [program.code(d.value) for d in total] == ["x", None]
    assert [d.what for d in total] == [DefinedAs.ASSIGNMENT, DefinedAs.OTHER]
    b = facts.definition("b", last)
    assert b is not None and b.value is None and b.unpacked is not None
    assert (program.code(b.unpacked[0]), b.unpacked[1]) == ("x, (1, 2)", (1, 0))
    p = facts.definition("p", last)
    assert p is not None and p.unpacked is not None and program.code(p.unpacked[0]) == "make()"
    assert program.code(facts.definition("z", last).value) == "2"  # type: ignore[union-attr]
    loop = facts.definition("i", last)
    assert loop is not None and isinstance(loop.node, cst.For) and loop.value is None


def test_answers_about_one_place_are_equal() -> None:
    program = Program(NAMES)
    facts = program.facts
    last = program.read("model")[1]
    # two answers about one place are equal, and hash alike
    assert facts.definition("model", last) == facts.definition("model", program.read("model", 0)[1])
    assert len({facts.definition("model", last), facts.definition("model", last)}) == 1
    assert facts.definition("model", last) != facts.definition("x", last)


def test_lookup_follows_python_scoping() -> None:
    program = Program(NAMES)
    facts = program.facts
    # `width` in the method is the module's, not the class body's field
    name, site = program.read("width", 1)
    found = facts.definition(name, site)
    assert found is not None and program.code(found.value) == "3"
    assert facts.body_at(found.site) is program.module
    # an unbound name has no definition; a name bound twice has no single one
    assert facts.definitions("nowhere", site) == () and facts.definition("nowhere", site) is None
    last = program.read("model")[1]
    assert len(facts.definitions("total", last)) == 2 and facts.definition("total", last) is None


def test_definitions_of_statements_and_bodies() -> None:
    program = Program(NAMES)
    facts = program.facts
    net = program.cls("Net")
    defined = facts.definition_of(net)
    assert defined is not None and defined.what is DefinedAs.CLASS and defined.node is net
    assert defined == facts.definition("Net", program.read("model")[1])
    fields = facts.defined_in(net)
    assert set(fields) == {"width", "depth", "__call__"}
    assert program.code(fields["width"][0].annotation) == "int" and fields["width"][0].value is None
    assert [d.position for d in facts.defined_in(program.function("__call__"))["v"]] == [1]
    assert sorted(facts.defined_in(program.function("step"))) == sorted(
        ["model", "x", "args", "kwargs", "scale", "total", "a", "b", "c", "p", "q", "i", "handle", "y", "z"])


def test_the_name_an_expression_is_assigned_to() -> None:
    program = Program("import jax\ndef g(x):\n    return x\nf = jax.custom_jvp(g)\njax.jit(g)\n")
    calls = {program.code(call.func): (call, site) for call, site in program.index.of_type(cst.Call)}
    found = program.facts.assigned_to(*calls["jax.custom_jvp"])
    assert found is not None and found.name == "f" and found.what is DefinedAs.ASSIGNMENT
    assert program.facts.assigned_to(*calls["jax.jit"]) is None


PASSED = """
def solve(term, meter, *rest):
    return meter

solve(1, "bar")
solve(2, meter=None)
solve(*parts)
"""


def test_what_calls_pass_for_a_parameter() -> None:
    program = Program(PASSED)
    facts = program.facts
    solve = facts.defined_in(program.function("solve"))
    passed = facts.passed_for(solve["meter"][0])
    assert [program.code(argument) for argument, _ in passed] == ['"bar"', "None", None]
    assert all(facts.body_at(site) is program.module for _, site in passed)
    assert facts.passed_for(solve["rest"][0]) == []  # `*rest` is no single argument


def test_free_names_and_the_closure_of_a_function() -> None:
    program = Program("""
        scale = 2.0

        def outer(x, key):
            offset = x + 1
            def inner(y):
                local = y * offset
                return local + scale + key + (lambda z: z * offset)(y)
            return inner
    """)
    facts = program.facts
    inner = program.function("inner")
    assert sorted({name.value for name in facts.free_names(inner)}) == ["key", "offset", "scale"]
    captured = facts.captured(inner)
    assert sorted({name.value for name, _ in captured}) == ["key", "offset"]  # `scale` is the module's
    offset = next(found for name, found in captured if name.value == "offset")
    assert [d.what for d in offset] == [DefinedAs.ASSIGNMENT]


@pytest.mark.parametrize("source, expected", [
    ("__all__ = ['a', \"b\"]\n__all__ += ['c']\n", frozenset({"a", "b"})),
    ("__all__ = ('a',)\n", frozenset({"a"})),
    ("x = 1\n", None),
])
def test_the_names_a_module_exports(source: str, expected: frozenset[str] | None) -> None:
    assert Program(source).facts.exported_names() == expected


def test_where_code_runs_and_in_which_order() -> None:
    program = Program("""
        a = 1
        def f():
            b = [c for c in range(3)]
            return b
        class C:
            d = a
        e = 2
    """)
    facts = program.facts
    sites = {node.value: site for node, site in program.index.of_type(cst.Name)}
    assert facts.body_at(sites["b"]) is program.function("f")
    assert isinstance(facts.body_at(sites["c"]), cst.ListComp)
    assert facts.body_at(sites["d"]) is program.cls("C")
    a, e = program.names("a")[0][1], sites["e"]
    assert facts.precedes(a, e) and not facts.precedes(e, a) and not facts.precedes(a, a)
    assert not facts.precedes(a, sites["b"])  # not the same body


def test_the_function_that_runs_a_branch() -> None:
    program = Program("""
        import jax

        def step(key, x):
            def left(v):
                return jax.random.normal(key) + v
            return jax.lax.cond(x > 0, left, lambda v: v, x)

        def body(carry, _):
            def inner(v):
                return v
            return inner(carry), None

        jax.lax.scan(body, 0.0, None, length=3)
    """)
    facts = program.facts
    inside_left = program.read("key")[1]
    assert facts.branch_runner(inside_left) is program.function("step")
    assert facts.branch_runner(program.read("carry")[1]) is None  # a scan body runs every step


def test_what_init_assigns_to_a_field() -> None:
    program = Program("""
        import jax.numpy as jnp

        class Layer:
            def __init__(self, n):
                self.w = jnp.zeros(n)
                if n:
                    self.w = None
                self.b = n
    """)
    found = program.facts.init_assignments(program.cls("Layer"), "w")
    assert [program.code(value) for value, _ in found] == ["jnp.zeros(n)"]  # the statements of the body only
    value, site = found[0]
    assert program.facts.qualname(cst.parse_expression("jnp.zeros"), site.scope) == "jax.numpy.zeros"
    assert program.facts.init_assignments(program.cls("Layer"), "c") == []


def test_the_fields_a_module_class_declares(tmp_path) -> None:
    (tmp_path / "base.py").write_text("import equinox as eqx\n\nclass Base(eqx.Module):\n    w: int\n")
    program = Program("""
        import abc
        import equinox as eqx
        from base import Base

        class A(eqx.Module, abc.ABC):
            x: int
            y = 2

        class B(A):
            z: float

        class C(Base):
            v: int

        class D(eqx.nn.MLP):
            u: int
    """, str(tmp_path / "main.py"))
    facts = program.facts
    assert declared_fields(facts, program.cls("A")) == {"x"}
    assert declared_fields(facts, program.cls("B")) == {"x", "z"}
    assert declared_fields(facts, program.cls("C")) == {"v", "w"}  # a base of another file of the project
    assert declared_fields(facts, program.cls("D")) is None  # a library's module: its fields are unknown


def test_traced_and_differentiated_parameters_are_definitions() -> None:
    program = Program("""
        import jax

        @jax.jit
        def f(x, n):
            y = x * 2
            return y

        def loss(w, t1):
            return solve(w, t1)

        jax.grad(loss, argnums=1)(1.0, 2.0)
    """)
    facts = program.facts
    name, site = program.read("y")
    traced = facts.traced_value(name, site)
    assert traced is not None and isinstance(traced.parameter, Definition)
    assert traced.parameter == facts.defined_in(program.function("f"))["x"][0]
    analysis = facts.differentiation
    call_t1, where = program.read("t1")
    origin = analysis.differentiated_source(call_t1, where)
    assert origin is not None and origin.name == "t1" and origin.position == 1
    root = analysis.root_of(origin)
    assert root is not None and root.transform == "jax.grad"
    w, where_w = program.read("w")
    assert analysis.differentiated_source(w, where_w) is None  # argnums=1: `w` is not differentiated
