"""Finds every rule: each module of `odelint.rules` (one folder per family) contributes the rule
classes it defines, so adding a rule never touches the engine.

`all_rules()` imports them all, for linting. The light paths (`rule_infos`, `known_codes`,
`info_for`, `file_patterns`) read the rules' metadata from `odelint.api.rule_index` instead,
so listing rules, resolving configuration and answering from the cache import no rule."""

from __future__ import annotations

import fnmatch
import functools
import importlib
import os

from odelint.api import rule_index
from odelint.api.rule_index import PYTHON_FILES, RuleInfo

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from odelint.api.rule import BaseRule


@functools.cache
def all_rules() -> tuple[type[BaseRule], ...]:
    """Every registered rule, engine codes first, sorted by code. Raises on a malformed rule."""
    import pkgutil

    import odelint.rules as package
    from odelint.api.engine_rules import ENGINE_RULES
    from odelint.api.rule import BaseRule, validate_rule

    found: dict[str, type[BaseRule]] = {rule.code: rule for rule in ENGINE_RULES}
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, BaseRule) and value.__module__ == module.__name__
                    and "code" in vars(value)):
                problems = validate_rule(value)
                if problems:
                    raise ValueError("; ".join(problems))
                if value.code in found and found[value.code] is not value:
                    raise ValueError(f"two rules claim {value.code}: {found[value.code].__name__}, {value.__name__}")
                found[value.code] = value
    return tuple(sorted(found.values(), key=lambda rule: rule.code))


def rules_by_code() -> dict[str, type[BaseRule]]:
    return {rule.code: rule for rule in all_rules()}


def rule_for(code_or_name: str) -> type[BaseRule] | None:
    for rule in all_rules():
        if _named(rule, code_or_name):
            return rule
    return None


@functools.cache
def rule_infos() -> tuple[RuleInfo, ...]:
    """Every rule's metadata, sorted like `all_rules()`: from the index when it is current,
    else from the rules themselves."""
    return rule_index.load() or tuple(RuleInfo.of(rule) for rule in all_rules())


def rules_digest() -> str:
    """Changes whenever a rule's metadata (its gate above all) may have changed."""
    return rule_index.sources_digest()


def known_codes() -> tuple[str, ...]:
    return tuple(info.code for info in rule_infos())


def info_for(code_or_name: str) -> RuleInfo | None:
    for info in rule_infos():
        if _named(info, code_or_name):
            return info
    return None


def _named(rule: type[BaseRule] | RuleInfo, code_or_name: str) -> bool:
    return code_or_name.upper() == rule.code or code_or_name == rule.name


def opt_in_codes() -> frozenset[str]:
    """The rules of the opt-in set: off unless selected by their exact code, or in preview."""
    return frozenset(info.code for info in rule_infos() if info.opt_in)


@functools.cache  # asked once per file with the same few sets of codes
def uses_versions(codes: frozenset[str]) -> bool:
    """Does any of these rules read the target versions of the JAX stack? (From the index, so
    a warm run imports no rule.)"""
    return any(info.uses_versions for info in rule_infos() if info.code in codes)


@functools.cache
def file_patterns() -> tuple[str, ...]:
    """Every file-name pattern some rule looks at (Python files first)."""
    patterns = list(PYTHON_FILES)
    for rule in rule_infos():
        patterns += [pattern for pattern in rule.file_patterns if pattern not in patterns]
    return tuple(patterns)


def is_python_file(path: str) -> bool:
    """Files named like a text rule's files (requirements.txt, ...) are text; all else is Python,
    so a script named on the command line without `.py` is still linted as Python."""
    name = os.path.basename(path)
    if name.endswith((".py", ".pyi")):
        return True
    return not any(fnmatch.fnmatchcase(name, pattern) for pattern in file_patterns() if pattern not in PYTHON_FILES)
