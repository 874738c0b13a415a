"""What a call passes: an argument by keyword, by position or for a named parameter.

Rules match calls by parameter, so they all need the same careful reading of `*args`:
positions after a starred argument are unknowable and must not be guessed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal, cast, overload

import libcst as cst
from odelint.analysis import rendered
from odelint.analysis.scopes import children_of

if TYPE_CHECKING:
    from odelint.analysis.jax_api import TracedBody
    from odelint.analysis.scopes import Binding


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    """The argument passed as `name=...`, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


@overload
def positional_args(call: cst.Call, before_star: Literal[True]) -> list[cst.Arg]: ...
@overload
def positional_args(call: cst.Call, before_star: bool = False) -> list[cst.Arg] | None: ...
def positional_args(call: cst.Call, before_star: bool = False) -> list[cst.Arg] | None:
    """Positional arguments in order. A `*args` makes the positions unknowable: the answer
    is then None, or with `before_star` the arguments before it (enough to find a
    transform's first argument)."""
    args: list[cst.Arg] = []
    for arg in call.args:
        if arg.star:
            return args if before_star else None
        if arg.keyword is None:
            args.append(arg)
    return args


def argument_at(call: cst.Call, name: str | None, position: int | None) -> cst.Arg | None:
    """The argument passed as `name=...`, else the one at `position` among the positional
    arguments (none when a `*args` hides the positions)."""
    named = keyword_arg(call, name) if name is not None else None
    if named is not None or position is None or position < 0:
        return named
    args = positional_args(call)
    return args[position] if args is not None and position < len(args) else None


def argument_for(call: cst.Call, param: Binding, bound: int = 0) -> cst.BaseExpression | None:
    """The expression `call` passes for parameter `param`; `bound` leading parameters are
    already bound (a method's `self`, a `functools.partial`'s arguments)."""
    arg = argument_at(call, param.name, param.path[0] - bound if param.path else None)
    return arg.value if arg is not None else None


def operand_args(call: cst.Call, body: TracedBody) -> list[tuple[str, cst.BaseExpression]]:
    """The pytrees a call of `lax` control flow carries or feeds its functions (scan's
    `init` and `xs`, cond's operands), each with the name of its parameter."""
    found = []
    for keyword in body.operand_keywords:
        arg = keyword_arg(call, keyword)
        if arg is not None:
            found.append((keyword, arg.value))
    args = positional_args(call) or []
    for position in body.operands:
        if position < len(args):
            label = body.operand_keywords[body.operands.index(position)] if body.operand_keywords else "operand"
            found.append((label, args[position].value))
    if body.operands_from is not None:
        found += [("operand", arg.value) for arg in args[body.operands_from:]]
    return found


def splatted_for(call: cst.Call, param: Binding, bound: int = 0) -> list[cst.BaseExpression]:
    """What may fill a positional parameter that a `*args` hides (`update(*carry, force)`): the
    starred values, and the positional arguments after the star that can land on it. Empty
    when the position is known (`argument_for` answers) or the call has no `*args`."""
    if not param.path or keyword_arg(call, param.name) is not None:
        return []
    position = param.path[0] - bound
    found: list[cst.BaseExpression] = []
    before, after = 0, None  # positional arguments before the first star; index after it
    for arg in call.args:
        if arg.keyword is not None or arg.star == "**":
            continue
        if arg.star == "*":
            after = 0 if after is None else after
            found.append(arg.value)
        elif after is None:
            before += 1
        else:
            if before + after <= position:  # the star may hold no element: the earliest it lands
                found.append(arg.value)
            after += 1
    return found if after is not None and position >= before else []


def calls_within(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call inside `node` (itself included), nested functions too."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            yield current
        stack.extend(children_of(current))


@functools.cache
def _no_module() -> cst.Module:
    """A module with the default newline and indent, to render a node of no module (made on
    first use: importing the model loads no LibCST)."""
    return cst.Module([])


def text_of(node: cst.CSTNode, module: cst.Module | None = None) -> str:
    """The source text of `node`, as `module` (else a module with default settings) renders
    it. Messages quote transforms and callees, mostly plain dotted names (`jax.jit`), many
    times per lint: those are joined from their names, which gives the same text as
    rendering (LibCST's renderer is the cost of naming them otherwise); an editor's document
    renders the rest once for all its lints while the node lasts (odelint.analysis.rendered)."""
    dotted = _plain_dotted(node)
    return dotted if dotted is not None else rendered.render(node, module or _no_module())


def _plain_dotted(node: cst.CSTNode) -> str | None:
    """`a.b.c` as written when it is a chain of names with no parentheses and no space or
    line break around a dot, else None."""
    parts = []
    while type(node) is cst.Attribute:  # exact types: an ABC's isinstance is slower
        attribute = cast(cst.Attribute, node)
        dot = attribute.dot
        if (attribute.lpar or not _tight(dot.whitespace_before) or not _tight(dot.whitespace_after)
                or attribute.attr.lpar):
            return None
        parts.append(attribute.attr.value)
        node = attribute.value
    if type(node) is not cst.Name or cast(cst.Name, node).lpar:
        return None
    parts.append(cast(cst.Name, node).value)
    return ".".join(reversed(parts))


def _tight(whitespace: cst.BaseParenthesizableWhitespace) -> bool:
    return type(whitespace) is cst.SimpleWhitespace and not cast(cst.SimpleWhitespace, whitespace).value


def source_of(module: cst.Module | None, node: cst.CSTNode, limit: int = 40) -> str:
    """`node`'s source on one line, cut to `limit` characters, for a message."""
    text = text_of(node, module) if module is not None else "..."
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
