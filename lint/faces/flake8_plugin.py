"""The flake8 face: `flake8 --select ODL` runs the engine on the lines flake8 has already read.

flake8 owns file discovery, `--select`/`--ignore`, `# noqa` and syntax errors (E999: it runs
no plugin on a file that does not parse); `[tool.odelint]` decides which rules run at all.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Iterator

from odelint import __version__
from odelint.api.registry import SyntaxErrorRule, all_rules
from odelint.engine.core import lint_source
from odelint.files.config import ConfigResolver, Overrides


@functools.cache
def _resolver(cwd: str) -> ConfigResolver:
    return ConfigResolver(Overrides(), [rule.code for rule in all_rules()], cwd)


class Flake8Plugin:
    """A flake8 tree plugin (flake8 classifies plugins by their parameter names; `tree` is
    unused: the engine parses with LibCST)."""

    name = "odelint"
    version = __version__

    def __init__(self, tree: object, lines: list[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        settings = _resolver(os.getcwd()).for_path(self.filename)
        codes = settings.enabled(self.filename) - {SyntaxErrorRule.code}
        result = lint_source("".join(self.lines), self.filename, codes, python=True, apply_noqa=False)
        for crash in result.crashes:
            print(f"odelint: error: {self.filename}: {crash.message()}", file=sys.stderr)
        for finding in result.findings:
            # flake8 wants 0-based columns and adds 1 when it prints them.
            yield finding.span.line, finding.span.column - 1, f"{finding.code} {finding.message}", type(self)
