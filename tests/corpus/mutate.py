"""Rewrites of example programs that keep their meaning, so a rule must still fire on them.

Used by tests/test_rule_robustness.py (mutated Flag examples and fixture hazards) and by
tests/corpus/check_corpus.py (hazard snippets appended to real files under unique names).
Each rewrite works on the LibCST tree and is deterministic.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import GlobalScope, ImportAssignment, MetadataWrapper, ParentNodeProvider, ScopeProvider

WRAPPINGS = ("function", "method", "nested")

# Similar-looking code that no rule may flag: an object with `init`/`update` methods that is
# not an optimiser, a loop and a lambda, a dictionary.
_UNRELATED_HEAD = '''

class _UnrelatedState:
    def __init__(self, value=0.0):
        self.value = value

    def init(self, params):
        return params

    def update(self, grads, state, params=None):
        return grads, state


def _unrelated_helper(xs, scale=2.0):
    total = 0.0
    for x in xs:
        total += scale * x
    return _UnrelatedState(total).init(sorted(xs, key=lambda v: -v))
'''
_UNRELATED_TAIL = '''

_UNRELATED_TABLE = {"a": 1, "b": [1.0, 2.0, 3.0]}
if _UNRELATED_TABLE:
    _unrelated_result = _unrelated_helper(_UNRELATED_TABLE["b"])
'''


def global_names(source: str, *, shadowed: bool = False) -> list[str]:
    """Names bound at module level that `rename` can rename (imports, defs, classes, variables).

    Unless `shadowed`, names that some function or class also binds are left alone: renaming
    the global would change which values share a name, which rules may rightly look at."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    scope = _global_scope(wrapper)
    skip = {a.name.split(".")[0] for a in scope.assignments if "." in a.name}
    for other in set(wrapper.resolve(ScopeProvider).values()) if not shadowed else ():
        if other is not None and other is not scope:
            skip.update(a.name for a in other.assignments)
    names = []
    for assignment in scope.assignments:
        name = assignment.name
        if name.startswith("__") or name in skip or "." in name or name in names:
            continue
        if _definition_names(assignment) is not None:
            names.append(name)
    return names


def rename(source: str, mapping: dict[str, str]) -> str:
    """Rename module-level bindings and every read of them; `import optax` becomes
    `import optax as <new>` and `from optax import adam` becomes `from optax import adam as <new>`."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    scope = _global_scope(wrapper)
    names: dict[int, str] = {}
    aliases: dict[int, str] = {}
    for assignment in scope.assignments:
        new = mapping.get(assignment.name)
        defined = _definition_names(assignment) if new is not None else None
        if defined is None:
            continue
        for node in defined:
            (aliases if isinstance(node, cst.ImportAlias) else names)[id(node)] = new
        for access in assignment.references:
            if isinstance(access.node, cst.Name):
                names[id(access.node)] = new
    return wrapper.module.visit(_Rename(names, aliases)).code


def unique_mapping(source: str, make, *, shadowed: bool = False) -> dict[str, str]:
    """`make(name)` for every renameable global, skipping new names the source already uses."""
    used = _all_names(source)
    mapping = {}
    for name in global_names(source, shadowed=shadowed):
        new = make(name)
        if new not in used:
            mapping[name] = new
            used.add(new)
    return mapping


def wrap(source: str, how: str) -> str:
    """Move everything after the docstring and the leading imports into a function
    (`function`), a method of a class (`method`) or a function nested in another (`nested`)."""
    module = cst.parse_module(source)
    head, rest = _split_head(module.body)
    if not rest:
        return source
    block = cst.IndentedBlock(rest)
    blank = [cst.EmptyLine(), cst.EmptyLine()]
    if how == "function":
        wrapped = cst.FunctionDef(cst.Name("_wrapped"), cst.Parameters(), block, leading_lines=blank)
    elif how == "method":
        method = cst.FunctionDef(cst.Name("run"), cst.Parameters([cst.Param(cst.Name("self"))]), block)
        wrapped = cst.ClassDef(cst.Name("_Holder"), cst.IndentedBlock([method]), leading_lines=blank)
    elif how == "nested":
        inner = cst.FunctionDef(cst.Name("_inner"), cst.Parameters(), block)
        returned = cst.SimpleStatementLine([cst.Return(cst.Name("_inner"))])
        wrapped = cst.FunctionDef(cst.Name("_outer"), cst.Parameters(), cst.IndentedBlock([inner, returned]),
                                  leading_lines=blank)
    else:
        raise ValueError(how)
    return module.with_changes(body=[*head, wrapped]).code


def add_unrelated(source: str) -> str:
    """Unrelated code after the leading imports (where fixes add theirs) and at the end."""
    module = cst.parse_module(source)
    head, rest = _split_head(module.body)
    before = list(cst.parse_module(_UNRELATED_HEAD).body)
    after = list(cst.parse_module(_UNRELATED_TAIL).body)
    return module.with_changes(body=[*head, *before, *rest, *after]).code


def from_imports(source: str) -> str:
    """`import optax` ... `optax.adamw(...)` becomes `from optax import adamw as adamw_from` ...
    `adamw_from(...)`; the module imports stay (fixes may still use them)."""
    wrapper = MetadataWrapper(cst.parse_module(source))
    scope = _global_scope(wrapper)
    parents = wrapper.resolve(ParentNodeProvider)
    used = _all_names(source)
    replace: dict[int, str] = {}
    imports: dict[tuple[str, str], str] = {}
    for assignment in scope.assignments:
        if not isinstance(assignment, ImportAssignment) or not isinstance(assignment.node, cst.Import):
            continue
        module_name = _imported_module(assignment)
        if module_name is None:
            continue
        for access in assignment.references:
            parent = parents.get(access.node)
            if not (isinstance(access.node, cst.Name) and isinstance(parent, cst.Attribute)
                    and parent.value is access.node):
                continue
            key = (module_name, parent.attr.value)
            if key not in imports:
                new = f"{parent.attr.value}_from"
                while new in used:
                    new += "_"
                used.add(new)
                imports[key] = new
            replace[id(parent)] = imports[key]
    if not imports:
        return source
    updated = wrapper.module.visit(_ReplaceAttributes(replace))
    head, rest = _split_head(updated.body)
    lines = [cst.parse_statement(f"from {module} import {attr} as {new}\n") for (module, attr), new in imports.items()]
    return updated.with_changes(body=[*head, *lines, *rest]).code


# -- helpers ----------------------------------------------------------------------------


def _global_scope(wrapper: MetadataWrapper) -> GlobalScope:
    scopes = wrapper.resolve(ScopeProvider)
    scope = scopes[wrapper.module]
    assert isinstance(scope, GlobalScope)
    return scope


def _definition_names(assignment) -> list[cst.CSTNode] | None:
    """The nodes that spell the bound name (an ImportAlias for imports), or None when the
    binding is of a kind `rename` does not handle (dotted imports, `global`, ...)."""
    node = assignment.node
    if isinstance(assignment, ImportAssignment):
        found = []
        for alias in node.names if not isinstance(node.names, cst.ImportStar) else ():
            if alias.asname is not None:
                bound = alias.evaluated_alias
            elif "." in alias.evaluated_name:
                continue
            else:
                bound = alias.evaluated_name
            if bound == assignment.name:
                found.append(alias)
        return found or None
    if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return [node.name]
    if isinstance(node, cst.Name):
        return [node]
    return None


def _imported_module(assignment: ImportAssignment) -> str | None:
    for alias in assignment.node.names:
        bound = alias.evaluated_alias if alias.asname is not None else alias.evaluated_name
        if bound == assignment.name:
            return alias.evaluated_name
    return None


def _split_head(body) -> tuple[list, list]:
    """(docstring and leading import lines, everything after) - where fixes insert imports."""
    body = list(body)
    position = 0
    if body and _is_docstring(body[0]):
        position = 1
    while position < len(body) and isinstance(body[position], cst.SimpleStatementLine) and all(
            isinstance(small, (cst.Import, cst.ImportFrom)) for small in body[position].body):
        position += 1
    return body[:position], body[position:]


def _is_docstring(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _all_names(source: str) -> set[str]:
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

    cst.parse_module(source).visit(Collect())
    return found


class _Rename(cst.CSTTransformer):
    def __init__(self, names: dict[int, str], aliases: dict[int, str]) -> None:
        self.names = names
        self.aliases = aliases

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.names.get(id(original))
        return updated.with_changes(value=new) if new else updated

    def leave_ImportAlias(self, original: cst.ImportAlias, updated: cst.ImportAlias) -> cst.ImportAlias:
        new = self.aliases.get(id(original))
        return updated.with_changes(asname=cst.AsName(cst.Name(new))) if new else updated


class _ReplaceAttributes(cst.CSTTransformer):
    def __init__(self, replace: dict[int, str]) -> None:
        self.replace = replace

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        new = self.replace.get(id(original))
        return cst.Name(new) if new else updated
