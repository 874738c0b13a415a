"""The flake8 face: `flake8 --select ODL` runs the engine on the lines flake8 has already read.

flake8 owns file discovery, `--select`/`--ignore`, line-level `# noqa`, `# flake8: noqa` and
syntax errors (E999: it runs no plugin on a file that does not parse); `[tool.odelint]` decides
which rules run at all. The plugin honours the file-level directives flake8 does not know
(`# odelint: noqa`, and `# flake8: noqa: ODL201` with codes, which flake8 ignores) unless
flake8 runs with `--disable-noqa`.
"""

from __future__ import annotations

import ast
import functools
import os
import sys
import time
from collections.abc import Iterator

from odelint import __version__
from odelint.analysis import project
from odelint.api.engine_rules import SyntaxErrorRule
from odelint.api.registry import all_rules
from odelint.engine import noqa
from odelint.engine.collector import fewer_collections, sweeper
from odelint.engine.core import lint_source
from odelint.engine.once import linted_once
from odelint.engine.preload import load_linting
from odelint.files.config import ConfigResolver, Overrides


@functools.cache
def _resolver(cwd: str) -> ConfigResolver:
    return ConfigResolver(Overrides(), [rule.code for rule in all_rules()], cwd)


def _load_before_fork() -> None:
    """flake8 calls `parse_options` in its main process, before it forks its workers: the
    configuration and what every lint needs are loaded there once (odelint.engine.preload)."""
    _resolver(os.getcwd())
    load_linting()


def _forks(options: object) -> bool:
    """Will flake8 lint in forked workers? Only with more than one job and more than one file
    (`checker.Manager.run`). One file, stdin or `-j1` is linted in this process, which loads
    what it needs when it needs it: an editor's or pre-commit's flake8 on one file that no
    rule looks at never imports LibCST."""
    names = list(getattr(options, "filenames", None) or ["."])  # flake8 lints "." when given nothing
    if "-" in names:
        return False
    jobs = getattr(options, "jobs", None)
    count = (os.cpu_count() or 1) if jobs is None or getattr(jobs, "is_auto", False) else getattr(jobs, "n_jobs", 1)
    return count > 1 and (len(names) > 1 or os.path.isdir(names[0]))


class Flake8Plugin:
    """A flake8 tree plugin (flake8 classifies plugins by their parameter names): flake8's
    `ast` tree feeds the rules' pre-checks; the rules themselves run on LibCST."""

    name = "odelint"
    version = __version__
    disable_noqa = False
    flake8_run: tuple[int, int] | None = None  # this flake8 run: where files are is looked up once per run

    @classmethod
    def parse_options(cls, options: object) -> None:
        cls.disable_noqa = bool(getattr(options, "disable_noqa", False))
        cls.flake8_run = (os.getpid(), time.monotonic_ns())
        if _forks(options):
            _load_before_fork()

    def __init__(self, tree: ast.Module, lines: list[str], filename: str) -> None:
        self.tree = tree
        self.lines = lines
        self.filename = filename

    def run(self) -> Iterator[tuple[int, int, str, type]]:
        fewer_collections()  # flake8's workers parse every file too: fewer collector runs help both
        settings = _resolver(os.getcwd()).for_path(self.filename)
        codes = settings.enabled(self.filename) - {SyntaxErrorRule.code}
        source = "".join(self.lines)
        tree = self.tree if isinstance(self.tree, ast.Module) else None
        sweeper.before(len(source), project.forget)
        with project.places(self.flake8_run), linted_once():  # flake8 takes the findings as text: no fix is built
            result = lint_source(source, self.filename, codes, python=True, apply_noqa=False, tree=tree,
                                 versions=settings.versions_for(codes), options=settings.options)
        sweeper.linted(len(source), project.forget)  # as the runner does
        findings = (result.findings if self.disable_noqa
                    else noqa.unsuppressed(result.findings, source, line_level=False))
        for crash in result.crashes:
            print(f"odelint: error: {self.filename}: {crash.message()}", file=sys.stderr)
        for finding in findings:
            # flake8 wants 0-based columns and adds 1 when it prints them.
            yield finding.span.line, finding.span.column - 1, f"{finding.code} {finding.message}", type(self)
