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
