"""Call shapes, literals and Equinox classes of a sketched file, for the rules' declared needs.

Each function over-approximates what a rule's model code would find on the LibCST tree:
`configures` a transform's options call (`jax.jit(f, static_argnums=1)`, `partial(jax.jit,
...)`), `exact_string` a string the LibCST tree holds as one literal, `may_be_module_class` a
class whose bases may make it an Equinox module (`Facts.is_module_class`), `may_name_module`
a name some binding of which may hold a module (`Facts.kind`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from odelint.analysis import jax_api, literals
from odelint.analysis.project import NEVER_PROJECT

if TYPE_CHECKING:
    from odelint.analysis.sketch import FunctionNode, Sketch

UNHASHABLE_LITERALS = (ast.List, ast.ListComp, ast.Dict, ast.DictComp, ast.Set, ast.SetComp)
PARTIAL = "functools.partial"


def keyword(call: ast.Call, *names: str) -> ast.expr | None:
    """The value of the first of these keywords the call passes."""
    for given in call.keywords:
        if given.arg in names:
            return given.value
    return None


def positional(call: ast.Call, position: int) -> ast.expr | None:
    """The argument at `position`, if no `*args` comes before it (then it is unknown)."""
    if len(call.args) <= position or any(isinstance(arg, ast.Starred) for arg in call.args[:position + 1]):
        return None
    return call.args[position]


def configures(sketch: Sketch, call: ast.Call, transforms: frozenset[str]) -> bool:
    """Is `call` one of these transforms called with options, directly (`jax.jit(f, ...)`,
    `jax.jit(static_argnums=1)`) or through `functools.partial(jax.jit, ...)`?"""
    if sketch.qualnames(call.func) & transforms:
        return True
    first = call.args[0] if call.args else None
    return (PARTIAL in sketch.qualnames(call.func) and first is not None
            and bool(sketch.qualnames(first) & transforms))


def exact_string(sketch: Sketch, node: ast.AST) -> str | None:
    """The value of a string constant that LibCST reads as one `SimpleString`: not a part
    of an f-string, nor implicitly concatenated (`"a" "b"` takes at least four quotes, so a
    literal one line long and at most three characters longer than its value is one piece)."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return None
    if isinstance(sketch.parent(node), ast.JoinedStr) or node.end_lineno != node.lineno:
        return None
    width = (node.end_col_offset or 0) - node.col_offset
    return node.value if width <= len(node.value) + 3 else None


def may_be_module_class(sketch: Sketch, cls: ast.ClassDef, seen: frozenset[int] = frozenset()) -> bool:
    """May `Facts.is_module_class` hold: a base from Equinox or a library of modules, a class
    of another project file, or a class of this file that may itself be a module?"""
    if id(cls) in seen:
        return False
    for base in cls.bases:
        if any(_may_name_module_type(sketch, name) for name in sketch.qualnames(base)):
            return True
        if isinstance(base, ast.Name) and any(may_be_module_class(sketch, parent, seen | {id(cls)})
                                              for parent in sketch.classes.get(base.id, ())):
            return True
    return False


def _may_name_module_type(sketch: Sketch, qualname: str) -> bool:
    """`Facts.module_type` of a dotted name: Equinox, a library's module, or a class of a file
    of the project (one the import finds: `numpyro.distributions.Transform` is none)."""
    top = qualname.lstrip(".").split(".")[0]
    if top == "equinox" or jax_api.is_library_module(qualname):
        return True
    if "." not in qualname.lstrip(".") or top in NEVER_PROJECT:
        return False
    return sketch.project_file(qualname.rpartition(".")[0]) is not None


def enclosing_class(sketch: Sketch, node: ast.AST) -> ast.ClassDef | None:
    """The class whose body `node` is in (not inside a function of it)."""
    current = sketch.parent(node)
    while current is not None and not isinstance(current, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef,
                                                           ast.Lambda)):
        current = sketch.parent(current)
    return current if isinstance(current, ast.ClassDef) else None


def may_name_module(sketch: Sketch, name: str, called: frozenset[str], seen: frozenset[str] = frozenset()) -> bool:
    """May `Facts.kind` find the name `name` to be an Equinox module? Some binding of it must:
    a parameter (annotated, the `self` of a class that may be a module, or of a function the
    file calls by name: `called`, for `Facts._param_kind`), an annotated assignment, a loop
    target, or an assignment of a value that may be a module (not a literal, lambda or
    arithmetic, nor a name that cannot be one, nor a call of a library's function)."""
    seen = seen | {name}
    if any(_may_hold_module(sketch, value, called, seen) for value in sketch.bound(name)):
        return True
    if any(isinstance(loop.target, ast.Name) and loop.target.id == name  # what the loop runs over (`_element_kind`)
           for loop in sketch.of_type(ast.For, ast.AsyncFor, ast.comprehension)):
        return True
    if any(isinstance(node.target, ast.Name) and node.target.id == name
           for node in sketch.of_type(ast.AnnAssign)):
        return True
    return any(_param_may_be_module(sketch, function, name, called) for function in functions_and_lambdas(sketch))


def called_names(sketch: Sketch) -> frozenset[str]:
    """Every plain name the file reads (a function `Facts.callee` can resolve is called by one)."""
    return frozenset(node.id for node in sketch.of_type(ast.Name))


def functions_and_lambdas(sketch: Sketch) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda]:
    """Every `def` (methods too) and lambda of the file."""
    for functions in sketch.defs.values():
        yield from functions
    yield from sketch.of_type(ast.Lambda)


def _param_may_be_module(sketch: Sketch, function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                         name: str, called: frozenset[str]) -> bool:
    arguments = function.args
    ordered = [*arguments.posonlyargs, *arguments.args]
    for param in (*ordered, *arguments.kwonlyargs):
        if param.arg != name:
            continue
        if param.annotation is not None or getattr(function, "name", None) in called:
            return True
        owner = enclosing_class(sketch, function)
        if ordered and param is ordered[0] and owner is not None and may_be_module_class(sketch, owner):
            return True
    return False


def _may_hold_module(sketch: Sketch, value: ast.expr, called: frozenset[str], seen: frozenset[str]) -> bool:
    """Can `Facts.kind` make this assigned value a module: a name that may be one, a call
    (`_call_kind`) but of a library's function that builds none, an attribute or an item, also
    as an element of a tuple that is unpacked?"""
    if isinstance(value, (ast.Tuple, ast.List)):
        return any(_may_hold_module(sketch, element, called, seen) for element in value.elts)
    if isinstance(value, ast.Name):
        return value.id not in seen and may_name_module(sketch, value.id, called, seen)
    if isinstance(value, ast.Call):
        return _call_may_build_module(sketch, value.func)
    return isinstance(value, (ast.Attribute, ast.Subscript))


def _call_may_build_module(sketch: Sketch, func: ast.expr) -> bool:
    """May `Facts._call_kind` find a module: a module class called, an Equinox function that
    keeps its argument's kind, or a function of this file (or any whose meaning the sketch
    cannot name). A library's function (`copy.copy`, `jnp.zeros`) builds none."""
    names = sketch.qualnames(func)
    if not names or isinstance(func, ast.Call):
        return True
    if isinstance(func, ast.Name) and (func.id in sketch.defs or func.id in sketch.classes):
        return True
    return any(name in jax_api.kind_preserving() or _may_name_module_type(sketch, name) for name in names)


def only_functions(sketch: Sketch, names: Iterable[str]) -> frozenset[str]:
    """Those of `names` that the file binds only by `def` or by `name = lambda ...` or
    `name = functools.partial(...)` (no other assignment, parameter, import, class, loop or
    `with` target), so that they always name a plain function, never a module or a method."""
    functions = set(sketch.defs)
    rebound: set[str] = set()
    for name in sketch.of_type(ast.Name):
        if isinstance(name.ctx, ast.Load):
            continue
        statement = sketch.parent(name)
        if isinstance(statement, ast.Assign) and statement.targets == [name] and _plain_function(
                sketch, statement.value):
            functions.add(name.id)
        else:
            rebound.add(name.id)
    rebound.update(arg.arg for arg in sketch.of_type(ast.arg))
    rebound.update(sketch.classes)
    for node in sketch.of_type(ast.Import, ast.ImportFrom):
        rebound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    rebound.update(node.name for node in sketch.of_type(ast.ExceptHandler, ast.MatchAs, ast.MatchStar)
                   if node.name)
    rebound.update(node.rest for node in sketch.of_type(ast.MatchMapping) if node.rest)
    return frozenset(name for name in names if name in functions and name not in rebound)


def _plain_function(sketch: Sketch, value: ast.expr) -> bool:
    """A lambda, or `functools.partial(...)` (`Facts.kind` FUNCTION; not `eqx.Partial`, a pytree)."""
    return isinstance(value, ast.Lambda) or (isinstance(value, ast.Call) and sketch.qualnames(value.func) == {PARTIAL})


def parameters(function: FunctionNode) -> list[ast.arg]:
    """The parameters a call fills by position or keyword (`*args` and `**kwargs` bind none the
    model follows): the positional ones, then the keyword-only ones."""
    arguments = function.args
    return [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]


def positional_names(function: FunctionNode) -> list[str]:
    """The names of the parameters a call may fill by position, in order."""
    arguments = function.args
    return [arg.arg for arg in (*arguments.posonlyargs, *arguments.args)]


def static_options(call: ast.Call, keywords: Iterable[str]) -> tuple[frozenset[str], frozenset[int]]:
    """The names (`static_argnames`) and positions (`static_argnums`, ...) that these keywords of
    an options call mark static, read as the rules read them (literals only: any other value
    marks nothing, so the pre-check says "maybe")."""
    names: frozenset[str] = frozenset()
    numbers: frozenset[int] = frozenset()
    for given in call.keywords:
        if given.arg is None or given.arg not in keywords:
            continue
        if given.arg.endswith("argnames"):
            names |= literals.ast_strings(given.value) or frozenset()
        else:
            numbers |= literals.ast_integers(given.value) or frozenset()
    return names, numbers
