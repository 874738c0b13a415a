"""The layers import only what they may (a plain `ast` scan of every import, lazy ones in
functions included), so the model stays one model and each face one face.

- `analysis` (the semantic model) imports no other layer, except the types of a finding's fix
  (`odelint.api.finding`): `Facts.reference` answers with the `NeedImport` a fix adds.
- `files` (discovery, configuration, cache) never imports the model: the engine hands the
  cache the model's file stamps.
- `proof` (confirm, fixtures, doctor) never imports a rule.
- `rules` import the rule API (`odelint.api`), the model's one door (`odelint.analysis`
  itself, with its namespaces `jax_api`, `literals`, ...: see its `__init__`) and their own
  family's shared modules; nothing of the engine, the files layer, the faces, or the model's
  modules, and they never reach into the scope index (`facts.index`).
"""

from __future__ import annotations

import ast
import pathlib
import re
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = {"odelint": ROOT / "lint", "odelint.rules": ROOT / "rules"}


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "odelint" and parts[0] == "rules":
                continue
            name = ".".join((package, *parts)).removesuffix(".__init__")
            found[name] = path
    return found


MODULES = _modules()


def imports_of(name: str) -> set[str]:
    """Every odelint module `name` imports (absolute, `from odelint.x import y` giving
    `odelint.x.y` when that is a module, else `odelint.x`)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in MODULES else base)
    return {module for module in found if module == "odelint" or module.startswith("odelint.")}


def _layer(module: str) -> str:
    """`odelint.analysis.facts` -> "analysis"; `odelint.rules.arrays.x` -> "rules"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def violations(layer: str, allowed: tuple[str, ...], forbidden: tuple[str, ...]) -> list[str]:
    """`module imports other` lines for the modules of `layer` that break its contract:
    importing something under `forbidden` that is not under `allowed`."""
    found = []
    for name in sorted(MODULES):
        if _layer(name) != layer:
            continue
        for other in sorted(imports_of(name)):
            if _within(other, forbidden) and not _within(other, allowed):
                found.append(f"{name} imports {other}")
    return found


ALL_LAYERS = ("odelint.api", "odelint.analysis", "odelint.engine", "odelint.files", "odelint.faces",
              "odelint.proof", "odelint.rules")
CONTRACTS = {
    "analysis": (("odelint.analysis", "odelint.api.finding"), ALL_LAYERS),
    "files": (("odelint.files",), ("odelint.analysis", "odelint.engine", "odelint.faces", "odelint.proof",
                                    "odelint.rules")),
    "proof": ((), ("odelint.rules",)),
    "rules": (("odelint.api", "odelint.analysis", "odelint.rules"), ALL_LAYERS + ("odelint",)),
}


def _door() -> tuple[str, ...]:
    from odelint import analysis

    return ("odelint.analysis", *(f"odelint.analysis.{name}" for name in analysis.NAMESPACES))


@pytest.mark.parametrize("layer", sorted(CONTRACTS))
def test_layer_imports_only_what_it_may(layer: str) -> None:
    allowed, forbidden = CONTRACTS[layer]
    assert violations(layer, allowed, forbidden) == []


def test_rules_enter_the_model_through_its_door_only() -> None:
    door = _door()
    found = [f"{name} imports {other}" for name in sorted(MODULES) if _layer(name) == "rules"
             for other in sorted(imports_of(name)) if _within(other, ("odelint.analysis",)) and other not in door]
    assert found == []
    reaching = [f"{MODULES[name].name}:{node.lineno}" for name in sorted(MODULES) if _layer(name) == "rules"
                for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8")))
                if isinstance(node, ast.Attribute) and node.attr == "index"
                and isinstance(node.value, (ast.Name, ast.Attribute)) and ast.unparse(node.value).endswith("facts")]
    assert reaching == []


def test_the_door_names_what_it_gives_and_type_checkers_see_the_same() -> None:
    """Every name of the door loads, and the `TYPE_CHECKING` imports (what mypy reads) give
    exactly the door's names, from the same modules."""
    from odelint import analysis

    given = {name: (module, name) for module, names in analysis.DOOR.items() for name in names}
    given.update(analysis.RENAMED)
    tree = ast.parse(MODULES["odelint.analysis"].read_text(encoding="utf-8"))
    checked = {alias.asname or alias.name: (node.module.rpartition(".")[2], alias.name)
               for block in tree.body if isinstance(block, ast.If)
               for node in block.body if isinstance(node, ast.ImportFrom) and node.module
               for alias in node.names}
    assert checked == given
    assert all(getattr(analysis, name) is not None for name in given)
    # a name that is also a module's would give the module once that module is imported
    assert not set(given) & {path.stem for path in (ROOT / "lint" / "analysis").glob("*.py")}


def test_the_scan_sees_lazy_and_relative_imports() -> None:
    """The scan is not blind: the engine imports the model, lazily too."""
    assert "odelint.analysis.facts" in imports_of("odelint.engine.core")
    assert "odelint.analysis.sketch" in imports_of("odelint.engine.core")  # imported inside a function
    assert violations("engine", (), ("odelint.analysis",)) != []
    assert len([name for name in MODULES if _layer(name) == "rules"]) > 30


# -- rules hold no API names of their own ----------------------------------------------------

QUALIFIED = re.compile(r"^(jax|jaxlib|jaxtyping|equinox|optax|diffrax|lineax|optimistix|numpy|functools|typing|abc)"
                       r"(\.[A-Za-z_]\w*)+\.?$")
METADATA = frozenset({"code", "name", "summary", "triggers", "examples", "fixtures"})


def _prose(tree: ast.Module) -> set[int]:
    """Nodes of docstrings, examples (`Flag`/`Pass`), metadata, f-strings and message pieces:
    the literals a rule may hold (a call with a string holding a backtick builds a message)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
            skipped.add(id(body[0].value))
        inside: ast.AST | None = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("Flag", "Pass"):
            inside = node
        elif isinstance(node, ast.Call) and any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                                and "`" in a.value for a in node.args):
            inside = node
        elif isinstance(node, ast.JoinedStr):
            inside = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and any(
                isinstance(t, ast.Name) and t.id in METADATA
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target])):
            inside = node
        if inside is not None:
            skipped.update(id(inner) for inner in ast.walk(inside))
    return skipped


def qualified_literals(path: pathlib.Path) -> list[str]:
    """`file:line: 'name'` for each string that is a qualified name outside prose."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    prose = _prose(tree)
    return [f"{path.name}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
            and QUALIFIED.match(node.value)]


def test_rules_hold_no_qualified_names_of_their_own() -> None:
    """Every API name a rule asks about lives in the model's tables (lint/analysis/data,
    `[names]` by role): a new spelling of an API is one line there, not a hunt through rules."""
    found = [f"{path.parent.name}/{line}" for path in sorted((ROOT / "rules").rglob("*.py"))
             for line in qualified_literals(path)]
    assert found == []


def test_the_name_scan_sees_a_name_set(tmp_path: pathlib.Path) -> None:
    rule = tmp_path / "rule.py"
    rule.write_text('"""Docs name `jax.jit`."""\nCOMPILERS = frozenset({"jax.jit", "equinox.filter_jit"})\n'
                    'summary = "jax.jit recompiles"\nmessage = f"use {x} jax.lax.scan"\n')
    assert [line.rpartition(": ")[2] for line in qualified_literals(rule)] == ["'jax.jit'", "'equinox.filter_jit'"]



def test_rules_hold_no_pre_check_code() -> None:
    """A rule declares what a file must contain (`needs`, odelint.analysis.needs); the engine
    evaluates it on the Sketch. No rule reads CPython's `ast` or writes a `may_fire`."""
    found = []
    for name in sorted(MODULES):
        if _layer(name) != "rules":
            continue
        tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
        found += [f"{name}: import ast" for node in ast.walk(tree)
                  if isinstance(node, ast.Import) and any(alias.name == "ast" for alias in node.names)]
        found += [f"{name}: def {node.name}" for node in ast.walk(tree)
                  if isinstance(node, ast.FunctionDef) and node.name == "may_fire"]
    assert found == []


# -- rules read nothing of the scope index: no binding, no scope's insides --------------------
#
# What a name means reaches a rule as the model's answer (`Definition`, `Site`, ...); the
# index's own records (`Binding`, `Scope`) never do. A rule may hold a scope (`site.scope`)
# only to hand it back to `Facts`. Which members of the door hand out the index's records is
# read from the model's own annotations, so a new one is caught without editing this test.

def _model_classes() -> list[type]:
    """Every class the model's modules define, the index's own records aside."""
    import importlib
    import inspect

    from odelint.analysis import scopes

    index_records = {scopes.Binding, scopes.Scope, scopes.ScopeIndex, scopes.ScopeBuilder, scopes.Site}
    found = []
    for path in sorted((ROOT / "lint" / "analysis").glob("*.py")):
        module = importlib.import_module(f"odelint.analysis.{path.stem}".removesuffix(".__init__"))
        found += [value for value in vars(module).values() if inspect.isclass(value)
                  and value.__module__ == module.__name__ and value not in index_records]
    return found


def _member_annotations(owner: type) -> dict[str, tuple[str, str]]:
    """Public member -> (the annotations of what it takes, of what it gives), as written."""
    import inspect

    found: dict[str, tuple[str, str]] = {}
    for klass in reversed(owner.__mro__):
        if not klass.__module__.startswith("odelint."):
            continue
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            found[name] = ("", str(annotation))
        for name, member in vars(klass).items():
            function = member.fget if isinstance(member, property) else member
            if inspect.isfunction(function):
                signature = inspect.signature(function)
                takes = " ".join(str(p.annotation) for p in signature.parameters.values())
                found[name] = (takes, str(signature.return_annotation))
    return {name: texts for name, texts in found.items() if not name.startswith("_")}


def _door_objects() -> dict[str, object]:
    from odelint import analysis

    return {name: getattr(analysis, name) for names in analysis.DOOR.values() for name in names}


def index_members() -> tuple[frozenset[str], frozenset[str]]:
    """(members of the door's classes that take or give the index's bindings, members that
    give a scope): the first a rule may not touch, the second gives only a handle."""
    import inspect

    bindings, scopes_ = set(), set()
    for value in _door_objects().values():
        if not inspect.isclass(value):
            continue
        for name, (takes, gives) in _member_annotations(value).items():
            if re.search(r"\bBinding\b", takes + " " + gives):
                bindings.add(name)
            if re.search(r"\bScope\b", gives):
                scopes_.add(name)
    return frozenset(bindings), frozenset(scopes_)


def index_fields() -> frozenset[str]:
    """Fields of the index's records (bindings, scopes, sites, the index) that no LibCST node
    has (`value`, `name`, `annotation` are node fields too), the scope handle aside."""
    import dataclasses
    import inspect

    import libcst as cst
    from odelint.analysis import scopes

    records = (scopes.Binding, scopes.Scope, scopes.Site)
    fields = {field.name for record in records for field in dataclasses.fields(record)}
    fields |= {name for record in records for name, value in vars(record).items() if isinstance(value, property)}
    fields |= set(vars(scopes.ScopeIndex(cst.parse_module(""))))
    node_fields = {field.name for value in vars(cst).values()
                   if inspect.isclass(value) and dataclasses.is_dataclass(value) for field in dataclasses.fields(value)}
    return frozenset(fields - node_fields - {HANDLE})


def index_only_fields() -> frozenset[str]:
    """The index's fields that no answer of the model has either (`node` is also a
    `Definition`'s): whatever object a rule reads one of, it reads the index."""
    answers = {name for owner in _model_classes() for name in _member_annotations(owner)}
    return index_fields() - answers


HANDLE = "scope"  # the one field of the index a rule reads: a site's scope, to hand back to Facts
_REFLECTION = frozenset({"getattr", "setattr", "hasattr", "delattr", "vars"})


class _Scopes:
    """Which expressions of one rule module hold a scope: `.scope` of anything, the door's
    members that give one, and the names, attributes and functions those flow into (a
    parameter annotated `Scope` too). Flow-insensitive over the module, so a scope cannot be
    laundered through a local name, an attribute of the rule or a helper."""

    def __init__(self, tree: ast.Module, givers: frozenset[str]) -> None:
        self.attributes = {HANDLE, *givers}
        self.names: set[str] = set()
        self.functions = {node.name for node in ast.walk(tree)
                          if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and node.returns is not None and "Scope" in ast.unparse(node.returns)}
        for node in ast.walk(tree):
            if isinstance(node, ast.arg) and node.annotation is not None and "Scope" in ast.unparse(node.annotation):
                self.names.add(node.arg)
        changed = True
        while changed:
            size = len(self.names) + len(self.attributes)
            for node in ast.walk(tree):
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                    annotated = isinstance(node, ast.AnnAssign) and "Scope" in ast.unparse(node.annotation)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for target in targets:
                        self._flow(target, node.value, annotated)
            changed = len(self.names) + len(self.attributes) != size

    def _flow(self, target: ast.expr, value: ast.expr, annotated: bool = False) -> None:
        """`a, b = x, site.scope` taints `b` only; `a, b = helper()` both when it gives a scope."""
        if (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))
                and len(target.elts) == len(value.elts)):
            for inner, part in zip(target.elts, value.elts, strict=True):
                self._flow(inner, part)
        elif annotated or self.holds(value):
            self._taint(target)

    def _taint(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.names.add(target.id)
        elif isinstance(target, ast.Attribute):
            self.attributes.add(target.attr)
        elif isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
            for inner in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target.value]:
                self._taint(inner)

    def holds(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return node.attr in self.attributes
        if isinstance(node, ast.Call):
            func = node.func
            return ((isinstance(func, ast.Attribute) and (func.attr in self.attributes or func.attr in self.functions))
                    or (isinstance(func, ast.Name) and func.id in self.functions))
        if isinstance(node, (ast.IfExp, ast.BoolOp, ast.Tuple, ast.List)):
            parts = ([node.body, node.orelse] if isinstance(node, ast.IfExp)
                     else node.values if isinstance(node, ast.BoolOp) else node.elts)
            return any(self.holds(part) for part in parts)
        if isinstance(node, (ast.NamedExpr, ast.Starred)):
            return self.holds(node.value)
        if isinstance(node, ast.Subscript):
            return self.holds(node.value)
        return False


def index_reads(path: pathlib.Path) -> list[str]:
    """`file:line: what` for each place a rule module reaches into the index: a member that
    takes or gives bindings, a field only the index has, anything read off a scope, a site
    built by hand, reflection on the index's fields, a private attribute of the model."""
    bindings, givers = index_members()
    only_index, reflected = index_only_fields(), index_fields()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scopes_ = _Scopes(tree, givers)
    found = []
    for node in ast.walk(tree):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute):
            if node.attr in bindings:
                found.append(f"{where}: `.{node.attr}` hands out the index's bindings")
            elif node.attr in only_index:
                found.append(f"{where}: `.{node.attr}` is the index's own")
            elif scopes_.holds(node.value):
                found.append(f"{where}: `.{node.attr}` read off a scope")
            elif node.attr.startswith("_") and not node.attr.startswith("__") and not (
                    isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")) and not (
                    isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                    and node.value.func.id == "super"):
                found.append(f"{where}: `.{node.attr}` is private to its owner")
            elif node.attr == "__dict__":
                found.append(f"{where}: `.__dict__`")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "Site":
                found.append(f"{where}: a site built by hand")
            elif node.func.id in _REFLECTION and node.args and (
                    scopes_.holds(node.args[0]) or any(isinstance(arg, ast.Constant) and arg.value in reflected
                                                       for arg in node.args[1:2])):
                found.append(f"{where}: `{node.func.id}` on the index")
    return sorted(found, key=lambda line: int(line.split(":")[1]))


def test_rules_read_no_binding_or_scope_of_the_index() -> None:
    found = [f"{path.parent.name}/{line}" for path in sorted((ROOT / "rules").rglob("*.py"))
             for line in index_reads(path)]
    assert found == []


def test_the_door_gives_no_binding_and_no_scope_type() -> None:
    """The door exports neither the index's records nor a function that takes or gives them;
    its classes' members that do (`Facts.lookup`, kept for the model's own modules) are the
    ones the rule scan forbids."""
    import inspect

    from odelint.analysis import scopes

    given = _door_objects()
    assert not {scopes.Binding, scopes.Scope, scopes.ScopeIndex} & {v for v in given.values() if inspect.isclass(v)}
    functions = [name for name, value in given.items() if inspect.isfunction(value)
                 and re.search(r"\bBinding\b", str(inspect.signature(value)))]
    assert functions == []
    bindings, givers = index_members()
    assert {"lookup", "binding_of"} <= bindings and "module_scope" in givers


def test_the_index_scan_sees_each_way_in(tmp_path: pathlib.Path) -> None:
    rule = tmp_path / "rule.py"
    rule.write_text(textwrap.dedent('''
        def visit_Call(self, node, site):
            a = site.scope.kind                           # read off a scope
            outer = site.scope
            b = outer.parent                              # through a name
            self.where = self.facts.body_scope(node)
            c = self.where.bindings                       # through an attribute: index's own field
            d = self.facts.lookup("x", site.scope)        # hands out bindings
            e = self.facts.module_scope.node              # a giver
            f = getattr(site.scope, "node")               # reflection
            g = getattr(node, "kind")                     # reflection on an index name
            h = Site(outer, 0)                            # a site built by hand
            i = site.order                                # the index's own
            j = definition._binding                       # private
            k = helper(site).node                         # a helper returning a scope

        def helper(site) -> Scope:
            return site.scope

        def inner(scope: Scope):
            return scope.kind                             # an annotated parameter

        def clean(self, node, site, definition):
            return (node.value, node.annotation, definition.node, definition.value,
                    self.facts.qualname(node.func, site.scope), site.scope is self.facts.module_scope,
                    self._helper(node), super()._x, self.where)
    '''))
    lines = [int(line.split(":")[1]) for line in index_reads(rule)]
    assert lines == [3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 21], index_reads(rule)
