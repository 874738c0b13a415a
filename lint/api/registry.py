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
from odelint.api.finding import Finding, Safety, Span
from odelint.api.rule import PYTHON_FILES, BaseRule, Pass, validate_rule
from odelint.api.rule_index import RuleInfo


class SyntaxErrorRule(BaseRule):
    """Reports files that do not parse.

    ## What it does
    Reports a file that Python's grammar (as LibCST parses it) rejects, with the position
    of the first error.

    ## Why is this bad?
    A file that does not parse cannot run, and no other rule can check it.

    ## Example
    ```python
    def step(model:
        ...
    ```

    ## Use instead
    Correct the syntax; odelint then checks the file with every rule.

    ## Fix safety
    No fix: odelint never guesses what broken code meant.
    """

    code = "ODL000"
    name = "syntax-error"
    summary = "The file does not parse"
    examples = (Pass("x = 1\n"),)


class IoErrorRule(BaseRule):
    """Reports files that could not be linted at all.

    ## What it does
    Reports a path that odelint was asked to lint but could not read or decode: it does not
    exist, it cannot be opened (permissions), it is not valid in its encoding (a Python file
    without an encoding declaration must be UTF-8), it is binary, it changed on disk while
    being fixed, or the `pyproject.toml` that governs it is broken. The message names the reason.

    ## Why is this bad?
    A file that was not read was not checked: a run that skipped it must not look clean. The
    finding appears in every output format (text, JSON, SARIF, GitHub annotations) and the run
    exits with status 2, as for any other error.

    ## Example
    ```console
    $ odelint check train.py missing.py
    missing.py:1:1: ODL001 no such file or directory
    ```

    ## Use instead
    Name files that exist, make them readable, save them as UTF-8 (or declare their encoding
    with a `# -*- coding: ... -*-` line), or repair the configuration.

    ## Fix safety
    No fix: only the user knows which file was meant.
    """

    code = "ODL001"
    name = "io-error"
    summary = "The file could not be read or linted"
    examples = (Pass("x = 1\n"),)

    @classmethod
    def finding(cls, path: str, reason: str, line: int = 1) -> Finding:
        return Finding(cls.code, cls.name, reason, Span(line, 1, line, 1), path)


class UnusedNoqaRule(BaseRule):
    """Reports `# noqa` codes that suppress nothing (off by default).

    ## What it does
    Reports a line-level `# noqa: ODLnnn` whose odelint code matches no finding on its line,
    as Ruff's RUF100 does. Only full codes of rules that are enabled count: a bare `# noqa`,
    another linter's codes (`E501`) and codes of rules that did not run may serve someone
    else. It runs only when selected: `--extend-select ODL002`, or
    `extend-select = ["ODL002"]` in `[tool.odelint]`.

    ## Why is this bad?
    A stale `# noqa` hides the next real finding on its line: once the code is fixed or
    moved, the comment keeps silencing a rule that would now have something to say.

    ## Example
    ```python
    opt_state = optim.init(eqx.filter(model, eqx.is_array))  # noqa: ODL201
    ```

    ## Use instead
    ```python
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    ```

    ## Fix safety
    Safe: `--fix` removes the unused codes, and the comment when it named nothing else.
    """

    code = "ODL002"
    name = "unused-noqa"
    summary = "A `# noqa` code suppresses nothing on its line"
    fix_safety = Safety.SAFE
    examples = (Pass("x = 1\n"),)


ENGINE_RULES: tuple[type[BaseRule], ...] = (SyntaxErrorRule, IoErrorRule, UnusedNoqaRule)


@functools.cache
def all_rules() -> tuple[type[BaseRule], ...]:
    """Every registered rule, engine codes first, sorted by code. Raises on a malformed rule."""
    import pkgutil

    import odelint.rules as package

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
