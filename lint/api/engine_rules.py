"""The engine's own rules: a file that does not parse (ODL000), one that could not be read or
linted (ODL001), and `# noqa` codes that suppress nothing (ODL002). They are rules so that
`select`, `ignore`, `odelint rule` and every report treat them as any other; the registry
puts them first. Apart from the registry, so that a warm run, which reports findings but runs
no rule, imports no rule class."""

from __future__ import annotations

from odelint.api.finding import IO_ERROR_CODE, SYNTAX_ERROR_CODE, Finding, Safety, Span
from odelint.api.rule import BaseRule, Pass


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

    code = SYNTAX_ERROR_CODE
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

    code = IO_ERROR_CODE
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
