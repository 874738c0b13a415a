"""The layers import only what they may (a plain `ast` scan of every import, lazy ones in
functions included), so the model stays one model and each face one face.

- `analysis` (the semantic model) imports no other layer, except the types of a finding's fix
  (`odelint.api.finding`): `Facts.reference` answers with the `NeedImport` a fix adds.
- `files` (discovery, configuration, cache) never imports the model: the engine hands the
  cache the model's file stamps.
- `proof` (confirm, fixtures, doctor) never imports a rule.
- `rules` import the rule API (`odelint.api`), the model's door (`odelint.analysis`,
  see its `__init__`) and their own family's shared modules; nothing of the engine, the
  files layer or the faces.
"""

from __future__ import annotations

import ast
import pathlib

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
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
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


@pytest.mark.parametrize("layer", sorted(CONTRACTS))
def test_layer_imports_only_what_it_may(layer: str) -> None:
    allowed, forbidden = CONTRACTS[layer]
    assert violations(layer, allowed, forbidden) == []


def test_the_scan_sees_lazy_and_relative_imports() -> None:
    """The scan is not blind: the engine imports the model, lazily too."""
    assert "odelint.analysis.facts" in imports_of("odelint.engine.core")
    assert "odelint.analysis.sketch" in imports_of("odelint.engine.core")  # imported inside a function
    assert violations("engine", (), ("odelint.analysis",)) != []
    assert len([name for name in MODULES if _layer(name) == "rules"]) > 30
