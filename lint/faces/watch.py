"""`odelint check --watch`: lint, then lint again whenever a file it would lint changes.

Runs stay cheap because the result cache re-lints only the files whose bytes changed. The
file watching is watchfiles' (native OS notifications), imported only here (`pip install
watchfiles`, or odelint's `watch` extra). Ctrl-C ends the watch with status 0, as in Ruff.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
import time
from collections.abc import Callable

from odelint.api.errors import UsageError
from odelint.api.registry import file_patterns
from odelint.files.cache import CACHE_DIR
from odelint.files.config import ConfigError
from odelint.files.selection import SelectionError

CONFIG_FILES = ("pyproject.toml", "odelint.toml")
CLEAR = "\x1b[2J\x1b[3J\x1b[H"
DEBOUNCE_MS = 300


def relevant(path: str, output_file: str | None = None) -> bool:
    """A change that can alter the report: a lintable file or a configuration file, outside
    the cache and other than the report odelint itself writes."""
    parts = os.path.normpath(path).split(os.sep)
    if CACHE_DIR in parts or (output_file and os.path.abspath(path) == os.path.abspath(output_file)):
        return False
    name = parts[-1]
    return name in CONFIG_FILES or any(fnmatch.fnmatchcase(name, pattern) for pattern in file_patterns())


def run(args: argparse.Namespace, check_once: Callable[[], int]) -> int:
    paths = args.paths or ["."]
    if "-" in paths:
        raise UsageError("--watch cannot watch standard input")
    if args.diff or args.add_noqa:
        raise UsageError("--watch works with checking and --fix, not with --diff or --add-noqa")
    try:
        import watchfiles
    except ImportError:
        raise UsageError("--watch needs the watchfiles package: pip install watchfiles") from None
    roots = [path for path in paths if os.path.exists(path)]
    if not roots:
        raise UsageError(f"--watch: none of {', '.join(paths)} exists")
    try:
        _announce("Starting linter in watch mode...")
        _lint(check_once)
        for _ in watchfiles.watch(*roots, watch_filter=lambda _, path: relevant(path, args.output_file),
                                  debounce=DEBOUNCE_MS, raise_interrupt=False):
            _announce("File change detected...")
            _lint(check_once)
    except KeyboardInterrupt:
        pass
    return 0


def _announce(message: str) -> None:
    if sys.stdout.isatty():
        sys.stdout.write(CLEAR)
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _lint(check_once: Callable[[], int]) -> None:
    """One run; a broken configuration is reported and the watch goes on (it may be fixed next)."""
    try:
        check_once()
    except (UsageError, ConfigError, SelectionError) as error:
        print(f"odelint: error: {error}", file=sys.stderr, flush=True)
    sys.stdout.flush()
