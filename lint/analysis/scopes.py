"""One traversal that learns what every name means: scopes, bindings and imports.

LibCST's ScopeProvider + QualifiedNameProvider cost about seven parses (see
bench/RESULTS.md), so odelint keeps its own lighter table: which names each scope
binds, from what, and in which order. The same traversal indexes the node types the
enabled rules asked for, so rules never walk the tree themselves.

The traversal does not use `CSTVisitor`: LibCST's `node.visit()` rebuilds every node it
passes (its `_visit_and_replace_children` serves transformers too), which costs about half
a parse. `children_of` reads the child fields directly, in LibCST's order, and skips the
whitespace and punctuation fields unless a rule asks for those node types.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import typing
from collections.abc import Iterable, Iterator

import libcst as cst

MODULE, FUNCTION, CLASS, LAMBDA, COMPREHENSION = "module", "function", "class", "lambda", "comprehension"

_Node = typing.TypeVar("_Node", bound="cst.CSTNode")


@dataclasses.dataclass(eq=False)
class Binding:
    """One place where a name gets a value.

    `value` is the right-hand side of an assignment and `path` the position inside a tuple
    unpacking (`a, (b, c) = ...` gives `c` the path (1, 1)); `qualname` is set for imports.
    """

    name: str
    scope: Scope
    order: int
    kind: str
    node: cst.CSTNode
    value: cst.BaseExpression | None = None
    path: tuple[int, ...] = ()
    qualname: str | None = None
    annotation: cst.BaseExpression | None = None

    def __repr__(self) -> str:
        return f"Binding({self.name!r}, {self.kind}, order={self.order}, path={self.path})"


@dataclasses.dataclass(eq=False)
class Scope:
    kind: str
    node: cst.CSTNode
    parent: Scope | None
    bindings: dict[str, list[Binding]] = dataclasses.field(default_factory=dict)
    global_names: set[str] = dataclasses.field(default_factory=set)
    nonlocal_names: set[str] = dataclasses.field(default_factory=set)

    def __repr__(self) -> str:
        return f"Scope({self.kind}, {type(self.node).__name__})"

    @property
    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope


@dataclasses.dataclass(frozen=True, eq=False)
class Site:
    """Where a node sits: its scope, and its place in evaluation order."""

    scope: Scope
    order: int


class ScopeIndex:
    """The result of the one traversal."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.module_scope = Scope(MODULE, module, None)
        self.nodes: dict[type, list[tuple[cst.CSTNode, Site]]] = {}
        self.body_scopes: dict[int, Scope] = {}
        self.top_orders: list[int] = []  # the order at which each top-level statement starts
        # The parts of loops that run once per iteration (a `for` loop's target and body, a
        # `while` loop's test and body), as (first order, last order, loop, scope of the loop).
        self.loop_parts: list[tuple[int, int, cst.For | cst.While, Scope]] = []
        self.star_imports: list[str] = []  # `from models import *` at the top level: "models"
        self._assigned: dict[int, list[Binding]] | None = None
        self._lookups: dict[tuple[str, int], tuple[Scope, list[Binding]]] = {}
        self._calls_by_name: dict[str, list[tuple[cst.Call, Site]]] | None = None
        self._calls_by_func: dict[int, tuple[cst.Call, Site]] | None = None
        # An editor document's analyses keep what they found in the statements an edit did not
        # touch (the same nodes in the next tree), by analysis; None for a file linted once.
        self.carried: dict[type, dict] | None = None

    def top_of(self, order: int | None) -> int | None:
        """The index of the top-level statement that the node visited at `order` lies in."""
        if order is None:
            return None
        position = bisect.bisect_right(self.top_orders, order) - 1
        return position if position >= 0 else None

    def loop_at(self, site: Site) -> cst.For | cst.While | None:
        """The innermost loop whose body runs the code at `site` once per iteration, in the
        same function: a nested function's body runs when called, not per iteration, while a
        comprehension in a loop body runs every iteration."""
        scope = _executing_scope(site.scope)
        found: tuple[int, cst.For | cst.While] | None = None
        for first, last, loop, loop_scope in self.loop_parts:
            if first <= site.order <= last and loop_scope is scope and (found is None or first > found[0]):
                found = (first, loop)
        return found[1] if found is not None else None

    def of_type(self, node_type: type[_Node]) -> list[tuple[_Node, Site]]:
        return typing.cast("list[tuple[_Node, Site]]", self.nodes.get(node_type, []))

    def body_scope(self, node: cst.CSTNode) -> Scope | None:
        """The scope that a function, lambda or class body opens."""
        return self.body_scopes.get(id(node))

    def lookup(self, name: str, scope: Scope) -> list[Binding]:
        """Python's name lookup (LEGB, class bodies invisible to nested functions), remembered:
        the rules and the model ask about the same few names in the same scopes many times."""
        key = (name, id(scope))
        known = self._lookups.get(key)
        if known is not None and known[0] is scope:  # the scope itself is kept: an id outlives no scope
            return known[1]
        found = self._lookup(name, scope)
        self._lookups[key] = (scope, found)
        return found

    def _lookup(self, name: str, scope: Scope) -> list[Binding]:
        if name in scope.global_names:
            return scope.module.bindings.get(name, [])
        current: Scope | None = scope
        first = True
        while current is not None:
            if current.kind == CLASS and not first:
                current = current.parent
                continue
            found = current.bindings.get(name)
            if found:
                return found
            current = current.parent
            first = False
        return []

    def calls_named(self, name: str) -> list[tuple[cst.Call, Site]]:
        """The calls whose function is the plain name `name` (`step(...)`), in source order."""
        self._index_calls()
        return self._calls_by_name.get(name, [])  # type: ignore[union-attr]

    def call_of(self, func: cst.CSTNode) -> tuple[cst.Call, Site] | None:
        """The call whose function is this very node (`jax.jit(f)` in `jax.jit(f)(x)`)."""
        self._index_calls()
        return self._calls_by_func.get(id(func))  # type: ignore[union-attr]

    def _index_calls(self) -> None:
        if self._calls_by_name is None:
            self._calls_by_name, self._calls_by_func = {}, {}
            for call, site in self.of_type(cst.Call):
                self._calls_by_func[id(call.func)] = (call, site)
                if type(call.func) is cst.Name:
                    self._calls_by_name.setdefault(call.func.value, []).append((call, site))

    def assignments_of(self, value: cst.CSTNode) -> list[Binding]:
        """The plain `name = <value>` bindings (no unpacking) whose right-hand side is this node."""
        if self._assigned is None:
            self._assigned = {}
            for binding in self.all_bindings():
                if binding.kind == "assign" and not binding.path and binding.value is not None:
                    self._assigned.setdefault(id(binding.value), []).append(binding)
        return self._assigned.get(id(value), [])

    def all_bindings(self) -> Iterable[Binding]:
        for scope in (self.module_scope, *self.body_scopes.values()):
            for bindings in scope.bindings.values():
                yield from bindings


@dataclasses.dataclass(eq=False)
class _Walked:
    """What the traversal learnt from one top-level statement: handed back as it is while the
    statement is (an editor's incremental parser keeps unchanged statements as the same
    objects), so an edit inside one function re-walks that function's statement only."""

    statement: cst.CSTNode
    first: int  # the order of its first node
    last: int   # of its last
    nodes: dict[type, list[tuple[cst.CSTNode, Site]]]
    body_scopes: dict[int, Scope]
    module_bindings: list[Binding]  # what it binds in the module scope, in order
    module_globals: set[str]
    loop_parts: list[tuple[int, int, cst.For | cst.While, Scope]]
    star_imports: list[str] = dataclasses.field(default_factory=list)


class Traversals:
    """One document's traversal, per top-level statement, kept from one lint to the next.

    Statements are walked with `ROOM` unused orders before each, so one that grows by fewer
    nodes leaves the orders (and so the Sites, Scopes and Bindings) of the next ones valid;
    the module scope is the same object from lint to lint, refilled each time."""

    ROOM = 512

    def __init__(self) -> None:
        self.wanted: frozenset[type] | None = None
        self.module_scope: Scope | None = None
        self.walked: dict[int, _Walked] = {}
        self.carried: dict[type, dict] = {}  # what each analysis keeps for the next lint (ScopeIndex.carried)


def _executing_scope(scope: Scope) -> Scope:
    """The function, lambda, class body or module whose code runs a comprehension's code."""
    while scope.kind == COMPREHENSION and scope.parent is not None:
        scope = scope.parent
    return scope


def target_names(target: cst.BaseExpression) -> list[str]:
    """The names an assignment or `for` target binds (`a`, `(a, b)`, `[a, *rest]`)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def names_read(*nodes: cst.CSTNode) -> frozenset[str]:
    """Every name the code of `nodes` mentions, nested code included."""
    found: set[str] = set()
    pending: list[cst.CSTNode] = list(nodes)
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name):
            found.add(current.value)
        else:
            pending.extend(children_of(current))
    return frozenset(found)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as text, or None for anything that is not a plain attribute chain."""
    parts = []
    while type(node) is cst.Attribute:  # exact types: an ABC's isinstance is slower
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


@functools.cache
def trivia() -> tuple[type, ...]:
    """Node types that hold only layout: whitespace, comments, brackets, commas, operators."""
    return (
        cst.BaseParenthesizableWhitespace, cst.Comment, cst.EmptyLine, cst.Newline, cst.TrailingWhitespace,
        cst.Comma, cst.Dot, cst.Colon, cst.Semicolon, cst.AssignEqual, cst.Asynchronous,
        cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket,
        cst.LeftCurlyBrace, cst.RightCurlyBrace,
        cst.BaseBinaryOp, cst.BaseBooleanOp, cst.BaseCompOp, cst.BaseUnaryOp, cst.BaseAugOp,
    )


@functools.lru_cache(maxsize=16)
def wants_trivia(wanted: frozenset[type]) -> bool:
    """Does a rule want layout nodes? Asked once per set of wanted types: `issubclass` against
    LibCST's ABCs, for every wanted type of every file, was 2% of the flake8 face's time."""
    return any(issubclass(node_type, trivia()) for node_type in wanted)


@functools.cache
def _source_order() -> dict[type, tuple[str, ...]]:
    """Where field order is not source order, LibCST visits in source order; so does odelint."""
    return {
        cst.Arg: ("keyword", "value"),
        cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
        cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
        cst.IfExp: ("body", "test", "orelse"),
        cst.ExceptHandler: ("type", "name", "body"),
        cst.ExceptStarHandler: ("type", "name", "body"),
        cst.Parameters: ("posonly_params", "posonly_ind", "params", "star_arg", "kwonly_params", "star_kwarg"),
        cst.MatchCase: ("pattern", "guard", "body"),
        cst.TypeAlias: ("name", "type_parameters", "value"),
    }


@functools.cache
def leaves() -> tuple[type, ...]:
    """Field values that are not nodes."""
    return (type(None), cst.MaybeSentinel, str, bool, int)


def _node_types_in(hint: object) -> Iterable[type]:
    origin = typing.get_origin(hint)
    if origin is None:
        if isinstance(hint, type) and issubclass(hint, cst.CSTNode):
            yield hint
        return
    if origin is not typing.Literal:
        for argument in typing.get_args(hint):
            yield from _node_types_in(argument)


@functools.cache
def child_fields(node_type: type) -> tuple[str, ...]:
    """The fields of `node_type` that can hold non-layout child nodes, in LibCST's visiting order."""
    names = _source_order().get(node_type) or tuple(field.name for field in dataclasses.fields(node_type))
    hints = typing.get_type_hints(node_type)
    kept = []
    for name in names:
        types = list(_node_types_in(hints.get(name)))
        if types and not all(issubclass(child_type, trivia()) for child_type in types):
            kept.append(name)
    return tuple(kept)


def own_nodes(root: cst.CSTNode, node_type: type[_Node]) -> Iterator[_Node]:
    """The nodes of a (concrete) type in `root`'s code, not in functions, classes or lambdas
    nested in it (a function's own `return`s, a handler's own `raise`s)."""
    pending: list[cst.CSTNode] = [root]
    nested = nested_code()
    while pending:
        node = pending.pop()
        kind = type(node)  # exact types: `isinstance` against LibCST's ABCs is several times slower
        if kind is node_type:
            yield node  # type: ignore[misc]
        elif kind not in nested:
            pending.extend(children_of(node))


@functools.cache
def nested_code() -> frozenset[type]:
    """Definitions whose code runs when called, not where they stand: functions, classes, lambdas."""
    return frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children` minus layout nodes, without rebuilding the node as `.children` does."""
    found: list[cst.CSTNode] = []
    not_nodes = _leaf_types()
    for name in child_fields(type(node)):
        value = getattr(node, name)
        kind = type(value)
        if kind is list or kind is tuple:
            found.extend(value)
        elif kind not in not_nodes:
            found.append(value)
    return found


@functools.cache
def _leaf_types() -> frozenset[type]:
    """`leaves()` as a set of exact types (children_of runs for every node a walk visits)."""
    return frozenset(leaves())


def _module_name(node: cst.BaseExpression | None, dots: int) -> str:
    text = dotted_name(node) if node is not None else ""
    return "." * dots + (text or "")


class ScopeBuilder:
    """Builds a ScopeIndex in one pass; indexes nodes of the requested types with their Site.

    `visit_<Type>` runs before a node's children (returning False skips them) and
    `leave_<Type>` after, as with LibCST's visitors."""

    def __init__(self, index: ScopeIndex, wanted: frozenset[type], memo: Traversals | None = None) -> None:
        self.index = index
        self.wanted = wanted
        self.trivia = wants_trivia(wanted)
        self.leaves = leaves()
        self.scope = index.module_scope
        self.order = 0
        self._plans: dict[type, tuple] = {}
        self.memo = memo if not self.trivia else None  # layout nodes live between statements too
        self._recording: _Walked | None = None

    # -- bookkeeping ---------------------------------------------------------------------

    def _plan(self, node_type: type) -> tuple:
        name = node_type.__name__
        cls = type(self)  # functions, not bound methods: a builder holding its own methods is a cycle
        plan = (getattr(cls, f"visit_{name}", None), getattr(cls, f"leave_{name}", None),
                None if self.trivia else child_fields(node_type))
        self._plans[node_type] = plan
        return plan

    def walk(self, node: cst.CSTNode) -> None:
        self.order += 1
        node_type = type(node)
        if node_type in self.wanted:
            self.index.nodes.setdefault(node_type, []).append((node, Site(self.scope, self.order)))
        visit, leave, fields = self._plans.get(node_type) or self._plan(node_type)
        if visit is None or visit(self, node) is not False:
            if fields is None:  # a rule wants layout nodes: LibCST's own (slower) child list
                for child in node.children:
                    self.walk(child)
            else:
                for name in fields:
                    value = getattr(node, name)
                    if isinstance(value, (list, tuple)):
                        for child in value:
                            self.walk(child)
                    elif not isinstance(value, self.leaves):
                        self.walk(value)
        if leave is not None:
            leave(self, node)

    def _bind(self, name: str, kind: str, node: cst.CSTNode, **extra) -> None:
        scope = self.scope
        if name in scope.global_names:
            scope = scope.module
        binding = Binding(name, scope, self.order, kind, node, **extra)
        scope.bindings.setdefault(name, []).append(binding)
        if self._recording is not None and scope is self.index.module_scope:
            self._recording.module_bindings.append(binding)

    def _bind_target(self, target: cst.BaseExpression, kind: str, node: cst.CSTNode,
                     value: cst.BaseExpression | None, path: tuple[int, ...] = (),
                     annotation: cst.BaseExpression | None = None) -> None:
        if isinstance(target, cst.Name):
            self._bind(target.value, kind, node, value=value, path=path, annotation=annotation)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for position, element in enumerate(target.elements):
                inner = element.value
                if isinstance(element, cst.StarredElement):
                    self._bind_target(inner, kind, node, None)
                else:
                    self._bind_target(inner, kind, node, value, path + (position,))
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, kind, node, None)

    def _open(self, kind: str, node: cst.CSTNode) -> Scope:
        scope = Scope(kind, node, self.scope)
        self.index.body_scopes[id(node)] = scope
        if self._recording is not None:
            self._recording.body_scopes[id(node)] = scope
        self.scope = scope
        return scope

    def _close(self, scope: Scope) -> None:
        self.scope = scope.parent  # type: ignore[assignment]

    def _visit_all(self, nodes: Iterable[cst.CSTNode | None]) -> None:
        for node in nodes:
            if node is not None:
                self.walk(node)

    def _bind_parameters(self, params: cst.Parameters, kind: str = "param") -> None:
        ordered = [*params.posonly_params, *params.params]
        for position, param in enumerate(ordered):
            self._bind(param.name.value, kind, param, annotation=_annotation(param),
                       path=(position,))
        for param in params.kwonly_params:
            self._bind(param.name.value, kind, param, annotation=_annotation(param))
        for star in (params.star_arg, params.star_kwarg):
            if isinstance(star, cst.Param):
                self._bind(star.name.value, "star-param", star)

    def _outer_parts_of_parameters(self, params: cst.Parameters) -> list[cst.CSTNode | None]:
        parts: list[cst.CSTNode | None] = []
        for param in [*params.posonly_params, *params.params, *params.kwonly_params,
                      params.star_arg, params.star_kwarg]:
            if isinstance(param, cst.Param):
                parts.append(param.annotation)
                parts.append(param.default)
        return parts

    # -- scopes --------------------------------------------------------------------------

    def visit_Module(self, node: cst.Module) -> bool:
        """Walks the body itself to note where each top-level statement starts."""
        for part in node.header if self.trivia else ():
            self.walk(part)
        if self.memo is None:
            for statement in node.body:
                self.index.top_orders.append(self.order + 1)
                self.walk(statement)
        else:
            walked: dict[int, _Walked] = {}
            for statement in node.body:
                found = self.memo.walked.get(id(statement))
                if found is None or found.statement is not statement or found.first <= self.order:
                    found = self._walk_top(statement)
                else:
                    self._replay(found)
                walked[id(statement)] = found
                self.order = found.last
            self.memo.walked = walked
        for part in node.footer if self.trivia else ():
            self.walk(part)
        return False

    def _walk_top(self, statement: cst.CSTNode) -> _Walked:
        """Walk a new (or moved) top-level statement, noting what it adds to the index."""
        self.order += Traversals.ROOM
        first = self.order + 1
        self.index.top_orders.append(first)
        sizes = {node_type: len(entries) for node_type, entries in self.index.nodes.items()}
        loops, stars = len(self.index.loop_parts), len(self.index.star_imports)
        self._recording = record = _Walked(statement, first, first, {}, {}, [], set(), [])
        try:
            self.walk(statement)
        finally:
            self._recording = None
        record.last = self.order
        for node_type, entries in self.index.nodes.items():
            if len(entries) > sizes.get(node_type, 0):
                record.nodes[node_type] = entries[sizes.get(node_type, 0):]
        record.loop_parts = self.index.loop_parts[loops:]
        record.star_imports = self.index.star_imports[stars:]
        return record

    def _replay(self, walked: _Walked) -> None:
        """Add what an unchanged top-level statement added last time, the same objects."""
        index = self.index
        index.top_orders.append(walked.first)
        for node_type, entries in walked.nodes.items():
            index.nodes.setdefault(node_type, []).extend(entries)
        index.body_scopes.update(walked.body_scopes)
        for binding in walked.module_bindings:
            index.module_scope.bindings.setdefault(binding.name, []).append(binding)
        index.module_scope.global_names.update(walked.module_globals)
        index.loop_parts.extend(walked.loop_parts)
        index.star_imports.extend(walked.star_imports)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._visit_all(node.decorators)
        self._visit_all(self._outer_parts_of_parameters(node.params))
        self._visit_all([node.returns])
        self._bind(node.name.value, "def", node)
        scope = self._open(FUNCTION, node)
        self._bind_parameters(node.params)
        self.walk(node.body)
        self._close(scope)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self._visit_all(self._outer_parts_of_parameters(node.params))
        scope = self._open(LAMBDA, node)
        self._bind_parameters(node.params)
        self.walk(node.body)
        self._close(scope)
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._visit_all(node.decorators)
        self._visit_all(node.bases)
        self._visit_all(node.keywords)
        scope = self._open(CLASS, node)
        self.walk(node.body)
        self._close(scope)
        self._bind(node.name.value, "class", node)
        return False

    def _visit_comprehension(self, node: cst.CSTNode) -> bool:
        self._open(COMPREHENSION, node)
        return True

    def _leave_comprehension(self, node: cst.CSTNode) -> None:
        self._close(self.scope)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, "for", node, None)

    # -- statements that bind ------------------------------------------------------------

    def visit_Global(self, node: cst.Global) -> None:
        self.scope.global_names.update(item.name.value for item in node.names)
        if self._recording is not None and self.scope is self.index.module_scope:
            self._recording.module_globals.update(item.name.value for item in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.scope.nonlocal_names.update(item.name.value for item in node.names)

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, "assign", node, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, "assign", node, node.value,
                          annotation=node.annotation.annotation)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, "augassign", node, None)

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, "assign", node, node.value)

    def visit_For(self, node: cst.For) -> bool:
        self._bind_target(node.target, "for", node, None)
        if self.trivia:  # layout nodes wanted: LibCST's child order, loops noted per child
            for child in node.children:
                self._walk_part(node, child, child is node.target or child is node.body)
            return False
        self._walk_part(node, node.target, True)
        self._walk_part(node, node.iter, False)
        self._walk_part(node, node.body, True)
        self._visit_all([node.orelse])
        return False

    def visit_While(self, node: cst.While) -> bool:
        if self.trivia:
            for child in node.children:
                self._walk_part(node, child, child is node.test or child is node.body)
            return False
        self._walk_part(node, node.test, True)
        self._walk_part(node, node.body, True)
        self._visit_all([node.orelse])
        return False

    def _walk_part(self, loop: cst.For | cst.While, part: cst.CSTNode, per_iteration: bool) -> None:
        first = self.order + 1
        self.walk(part)
        if per_iteration:
            self.index.loop_parts.append((first, self.order, loop, _executing_scope(self.scope)))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, "with", node, None)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._bind_target(node.name.name, "except", node, None)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        if node.name is not None:
            self._bind(node.name.value, "match", node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, "import", node, qualname=full)
            else:
                top = full.split(".")[0]
                self._bind(top, "import", node, qualname=top)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            if self.scope is self.index.module_scope:
                self.index.star_imports.append(_module_name(node.module, len(node.relative)))
            return
        base = _module_name(node.module, len(node.relative))
        for alias in node.names:
            imported = dotted_name(alias.name) or ""
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            qualname = f"{base}.{imported}" if not base.endswith(".") else base + imported
            self._bind(local, "import", node, qualname=qualname)


def _annotation(param: cst.Param) -> cst.BaseExpression | None:
    return param.annotation.annotation if param.annotation is not None else None


def build_scope_index(module: cst.Module, wanted: Iterable[type] = (), memo: Traversals | None = None) -> ScopeIndex:
    """The traversal's index of `module`. With `memo` (an editor document's), the top-level
    statements unchanged since the last call are not walked again."""
    wanted = frozenset(wanted)
    index = ScopeIndex(module)
    if memo is not None:
        if memo.wanted != wanted or memo.module_scope is None:
            memo.wanted, memo.module_scope, memo.walked, memo.carried = wanted, index.module_scope, {}, {}
        else:  # the same scope object, so the kept statements' scopes still have it as parent
            index.module_scope = memo.module_scope
            index.module_scope.node = module
            index.module_scope.bindings = {}
            index.module_scope.global_names = set()
            index.module_scope.nonlocal_names = set()
    ScopeBuilder(index, wanted, memo).walk(module)
    if memo is not None:
        index.carried = memo.carried
    return index
