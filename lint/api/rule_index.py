"""Rules' metadata without their modules, so that `odelint rules`, `odelint rule CODE` and a
warm `check` import no rule (nor the analysis and LibCST that rules import).

`rules/data/rule_index.json` (package data) holds each rule's code, name, summary, docs, fix
safety and file patterns, the list of the rules package's modules, and a digest of exactly
that content. `load` believes the index when its digest matches what it holds and the rule
modules on disk are the ones it lists; otherwise (a rule module added, removed or renamed; a
hand-edited or broken index) it returns None and the registry imports the rules. Editing a
rule's visitor or a data table leaves the index current; editing a rule's metadata makes it
stale, which `python -m odelint.dev generate --check` (CI, pre-commit) reports. Regenerate with

    python -m odelint.dev generate

(`python -m odelint.api.rule_index` still writes the index alone). The result cache keys on
`sources_digest()`, the status of every one of the rules' sources, so a changed visitor re-lints.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Iterable, Sequence

from odelint.api.finding import Safety
from odelint.api.records import NamedTuple
from odelint.files.digest import hasher, hexdigest

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from odelint.api.rule import BaseRule

INDEX_NAME = "rule_index.json"
REGENERATE = "python -m odelint.dev generate"
# the defaults and the engine rules the metadata depends on
_API_SOURCES = ("rule.py", "rule_index.py", "registry.py", "engine_rules.py", "finding.py")
PYTHON_FILES = ("*.py", "*.pyi")  # the files a rule looks at unless it names others (`file_patterns`)
_GENERATED = ("confirmations.json", INDEX_NAME)


class RuleInfo(NamedTuple):
    """What the faces and the configuration need to know about a rule, duck-typed like the
    rule class for `odelint.api.docs` (`code`, `name`, `summary`, `fix_safety`,
    `file_patterns`, `docs()`)."""

    code: str
    name: str
    summary: str
    text: str                           # the rule's docs, as `BaseRule.docs()` returns them
    fix_safety: Safety | None
    file_patterns: tuple[str, ...]
    uses_versions: bool = False         # reads FileContext.versions (the JAX stack's targets)
    opt_in: bool = False                # in the opt-in set (off unless selected by code or preview)

    def docs(self) -> str:
        return self.text

    @classmethod
    def of(cls, rule: type[BaseRule]) -> RuleInfo:
        return cls(rule.code, rule.name, rule.summary, rule.docs(), rule.fix_safety, tuple(rule.file_patterns),
                   rule.uses_versions, rule.opt_in)

    def to_dict(self) -> dict:
        return {"code": self.code, "name": self.name, "summary": self.summary,
                "fix_safety": self.fix_safety.value if self.fix_safety is not None else None,
                "file_patterns": list(self.file_patterns), "uses_versions": self.uses_versions, "opt_in": self.opt_in,
                "docs": self.text}

    @classmethod
    def from_dict(cls, entry: dict) -> RuleInfo:
        safety = Safety(entry["fix_safety"]) if entry["fix_safety"] is not None else None
        return cls(entry["code"], entry["name"], entry["summary"], entry["docs"], safety, tuple(entry["file_patterns"]),
                   entry.get("uses_versions", False), entry.get("opt_in", False))


def _rules_folder() -> str:
    import odelint.rules as package  # its __init__ is a docstring: importing it imports no rule

    return os.path.dirname(package.__file__ or "")


def data_file(name: str) -> str:
    """A file of the rules' package data (`rules/data/`), read as a plain file."""
    return os.path.join(_rules_folder(), "data", name)


def index_path() -> str:
    return data_file(INDEX_NAME)


def source_files() -> list[str]:
    """The files the metadata is computed from, in a fixed order."""
    rules = _rules_folder()
    found = []
    for folder, subfolders, names in os.walk(rules):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        found += [os.path.join(folder, name) for name in names
                  if name.endswith((".py", ".toml")) and name not in _GENERATED]
    tables = _tables_folder()
    found += [os.path.join(tables, name) for name in os.listdir(tables) if name.endswith(".toml")]
    api = os.path.dirname(os.path.abspath(__file__))
    return sorted(found) + [os.path.join(api, name) for name in _API_SOURCES]


def _tables_folder() -> str:
    """The model's API tables (odelint.analysis's data), which the rules' behaviour reads."""
    from odelint.analysis.tables import folder

    return folder()


@functools.cache
def sources_digest() -> str:
    """What the rules' behaviour comes from (for the result cache's key): each source's name,
    relative to its package, and its status (`statuses_digest`). (Statuses: a warm run read
    600 KB of sources before it could answer.)"""
    return statuses_digest(source_files(), _rules_folder())


def statuses_digest(paths: Iterable[str], top: str) -> str:
    """Each file's name (relative to `top` when under it, else its base name) and its status
    (size, modification and change times, inode), which changes whenever its contents do; a
    file changed in the last two seconds counts by its bytes. A file that vanished changes the
    digest."""
    from odelint.files.fileio import identity, settled

    digest = hasher()
    inside = os.path.join(top, "")
    for path in paths:
        relative = path[len(inside):] if path.startswith(inside) else os.path.basename(path)
        digest.update(relative.replace(os.sep, "/").encode() + b"\0")
        try:
            status = os.stat(path)
            if settled(status):
                digest.update(repr(identity(status)).encode())
            else:
                with open(path, "rb") as handle:
                    digest.update(b"bytes:" + handle.read())
        except OSError:
            digest.update(b"\0missing")
        digest.update(b"\0")
    return digest.hexdigest()


def rule_modules() -> list[str]:
    """The rules package's modules, relative to it (`arrays/prng_key_reuse.py`), sorted: a
    listing of names, no file read, so that `load` stays cheap."""
    rules = _rules_folder()
    found = []
    for folder, subfolders, names in os.walk(rules):
        subfolders[:] = sorted(name for name in subfolders if name not in ("__pycache__", "data"))
        relative = os.path.relpath(folder, rules).replace(os.sep, "/")
        found += [name if relative == "." else f"{relative}/{name}" for name in names if name.endswith(".py")]
    return sorted(found)


def render(rules: Iterable[type[BaseRule]]) -> str:
    """The index file's text: one rule per entry, sorted by code, so a merge shows which rule
    changed. Its digest is of the text after the digest's line, which `load` checks without
    writing the entries out again."""
    infos = sorted((RuleInfo.of(rule) for rule in rules), key=lambda info: info.code)
    lines = ",\n".join("  " + json.dumps(info.to_dict(), sort_keys=True) for info in infos)
    body = f'"modules": {json.dumps(rule_modules())},\n"rules": [\n{lines}\n]}}\n'
    return f'{{"generated_by": {json.dumps(REGENERATE)},\n{_DIGEST_LINE}{hexdigest(body.encode())}",\n{body}'


_DIGEST_LINE = '"digest": "'


def load() -> tuple[RuleInfo, ...] | None:
    """The indexed metadata, or None when the index is missing, unreadable, altered, or lists
    other rule modules than those on disk."""
    try:
        with open(index_path(), "rb") as handle:
            text = handle.read().replace(b"\r\n", b"\n")  # as a checkout on Windows may leave it
        digest, closed, body = text.partition(f"\n{_DIGEST_LINE}".encode())[2].partition(b'",\n')
        if not closed or digest != hexdigest(body).encode():
            return None
        document = json.loads(text)
        entries, modules = document["rules"], document["modules"]
        if modules != rule_modules():
            return None
        return tuple(RuleInfo.from_dict(entry) for entry in entries)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """Write the index alone from the rules themselves (importing every one of them); `python -m
    odelint.dev generate` writes it with the pages made from the same metadata."""
    from odelint.api.registry import all_rules

    text = render(all_rules())
    path = index_path()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    print(f"wrote {path} ({len(all_rules())} rules)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
