"""The `odelint` command: Ruff's flags and exit codes (0 clean, 1 findings, 2 errors).

Start-up is most of a warm run, so each command imports only what it uses: `--version`
nothing but argparse, `rules` and `rule` the rules' metadata index, `check` the runner (which
imports the rules, LibCST and multiprocessing only when some file must be linted)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
from collections.abc import Iterator, Sequence

from odelint import __version__
from odelint.api.errors import UsageError
from odelint.faces import report

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TextIO

    from odelint.api.finding import Finding
    from odelint.engine.result import RunResult
    from odelint.faces import colour
    from odelint.files import runs
    from odelint.files.config import ConfigResolver, Overrides

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# Subcommands that live in their own modules: each has add_arguments(parser) and run(args).
# Their modules import heavy or optional dependencies only inside run().
EXTRA_COMMANDS: dict[str, tuple[str, str]] = {
    "confirm": ("odelint.proof.confirm", "run"),
    "doctor": ("odelint.proof.doctor", "run"),
    "server": ("odelint.faces.server", "run"),
}


def _codes(value: str) -> list[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


def _check_parser(sub) -> None:
    check = sub.add_parser("check", help="lint files (the default command)")
    check.add_argument("paths", nargs="*", default=[], help="files or folders; '-' reads standard input")
    fixing = check.add_argument_group("fixing")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes (and unsafe ones with --unsafe-fixes)")
    fixing.add_argument("--unsafe-fixes", dest="unsafe_fixes", action="store_true", default=None,
                        help="also show and apply unsafe fixes")
    fixing.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a diff; change nothing")
    fixing.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to every reported line")
    rules = check.add_argument_group("rule selection")
    # Repeated, they accumulate (as Ruff's do): `--select ODL2 --select ODL7` enables both.
    rules.add_argument("--select", type=_codes, action="extend", help="codes or prefixes to enable (replaces the "
                       "config's)")
    rules.add_argument("--extend-select", type=_codes, action="extend", default=[], help="codes or prefixes to add")
    rules.add_argument("--ignore", type=_codes, action="extend", default=[], help="codes or prefixes to disable")
    rules.add_argument("--per-file-ignores", action="append", default=[], metavar="GLOB:CODES",
                       help="e.g. 'tests/*:ODL201,ODL202' (repeatable)")
    rules.add_argument("--target-version", action="append", default=[], metavar="PACKAGE==VERSION",
                       help="the jax/equinox/diffrax/optax version to check against, e.g. jax==0.4.33 "
                            "(repeatable; default: the project's pins, else the installed versions)")
    files = check.add_argument_group("files")
    files.add_argument("--exclude", type=lambda v: [p for p in v.split(",") if p], help="replace exclude patterns")
    files.add_argument("--extend-exclude", type=lambda v: [p for p in v.split(",") if p], default=[])
    files.add_argument("--extend-include", type=lambda v: [p for p in v.split(",") if p], default=[],
                       help="more file patterns to lint in folders (e.g. '*.pyw')")
    files.add_argument("--force-exclude", action="store_true", default=None,
                       help="apply exclude patterns to files named on the command line too")
    files.add_argument("--stdin-filename", help="the path that standard input stands for")
    files.add_argument("--config", action="append", default=[], metavar="FILE_OR_KEY=VALUE",
                       help="a pyproject.toml (or odelint.toml) to use for every file, or a `key = value` "
                            "TOML override of one setting, e.g. --config \"ignore = ['ODL302']\" (repeatable; "
                            "overrides win over every file)")
    files.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    files.add_argument("--preview", action="store_true", default=None,
                       help="also run the opt-in rules (each can be selected by its code instead)")
    output = check.add_argument_group("output")
    output.add_argument("--format", "--output-format", dest="format", choices=sorted(report.FORMATS), default="text")
    output.add_argument("-o", "--output-file", help="write the report to this file instead of standard output")
    output.add_argument("--statistics", action="store_true", help="count findings per rule")
    output.add_argument("--show-fixes", action="store_true", help="show each finding's fix; with --fix, list what "
                        "was fixed")
    output.add_argument("--no-show-fixes", dest="show_fixes", action="store_false")
    output.add_argument("--show-files", action="store_true", help="list the files that would be linted; lint "
                        "nothing")
    output.add_argument("--show-settings", action="store_true", help="print the settings of the first file that "
                        "would be linted; lint nothing")
    output.add_argument("-q", "--quiet", action="store_true", help="findings only: no snippets, no summary")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    output.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when any fix was applied")
    output.add_argument("-w", "--watch", action="store_true",
                        help="lint again whenever a file changes (needs watchfiles: `pip install watchfiles`)")
    speed = check.add_argument_group("speed")
    speed.add_argument("-j", "--jobs", type=int, default=None, help="worker processes (default: number of cores)")
    speed.add_argument("--no-cache", action="store_true", help="neither read nor write .odelint_cache")
    speed.add_argument("--cache-dir", help="where to keep the cache (default: ./.odelint_cache)")
    speed.add_argument("--max-file-size", type=float, default=None, metavar="MB",
                       help="report larger sources instead of linting them (default: 2 MB)")
    speed.add_argument("--file-timeout", type=float, default=None, metavar="SECONDS",
                       help="stop linting a file after this long and report it (default: 120; 0: no limit)")


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose help is laid out to the terminal's width, found once. (argparse
    itself builds a formatter for every option it adds, and each imports shutil, with its
    archive modules, to ask for the width: 2 of a warm run's 85 ms.) Subparsers are of this
    class too."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)


def _formatter(prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=_help_width())


@functools.cache
def _help_width() -> int:
    """What argparse would use: `COLUMNS`, else the terminal's columns, else 80; less 2."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 80
    return columns - 2


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """`command` names the one subcommand about to run: the other extra commands' modules are
    then not imported (their subparsers take no options and carry no help)."""
    parser = _Parser(prog="odelint", description="Lint and fix JAX, Equinox, Diffrax and Optax code.")
    parser.add_argument("--version", action="version", version=f"odelint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _check_parser(sub)
    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="a code (ODL201) or name")
    rule.add_argument("--all", action="store_true", help="every rule")
    rule.add_argument("--format", choices=["text", "json"], default="text")
    listing = sub.add_parser("rules", help="list every rule")
    listing.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    sub.add_parser("clean", help="remove the .odelint_cache folder")
    for name, (module, _) in EXTRA_COMMANDS.items():
        if command in (None, "-h", "--help", name):
            loaded = importlib.import_module(module)
            loaded.add_arguments(sub.add_parser(name, help=loaded.__doc__))
        else:
            sub.add_parser(name)
    return parser


COMMANDS = ("check", "rule", "rules", "clean", *EXTRA_COMMANDS)


def _normalise(argv: list[str]) -> list[str]:
    """`odelint PATHS` and `odelint --fix PATHS` mean `odelint check ...`; a first word that
    is neither a command nor an existing path but is close to a command is a typo
    (`odelint chek .`), not a request to lint everything else on the line."""
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help", "--version")):
        first = argv[0] if argv else ""
        if first and not first.startswith("-") and first != "-" and not os.path.lexists(first):
            import difflib

            close = difflib.get_close_matches(first, COMMANDS, n=1, cutoff=0.6)
            if close:
                raise UsageError(f"unknown command {first!r}; did you mean `odelint {close[0]}`?")
        return ["check", *argv]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    from odelint.engine.collector import fewer_collections

    fewer_collections()  # from the start: a warm run's imports and cache set off 17 collections, 3-4 ms
    try:
        args_list = _normalise(list(sys.argv[1:] if argv is None else argv))
    except UsageError as error:
        print(f"odelint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    parser = build_parser(args_list[0])
    args = parser.parse_args(args_list)
    try:
        if args.command == "check":
            return _check(args)
        if args.command == "rule":
            return _rule(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "clean":
            from odelint.files import cache as result_cache

            removed = result_cache.clean(os.path.join(os.getcwd(), result_cache.CACHE_DIR))
            print("removed .odelint_cache" if removed else "no cache to remove")
            return EXIT_CLEAN
        module, function = EXTRA_COMMANDS[args.command]
        return getattr(importlib.import_module(module), function)(args)
    except _user_errors() as error:  # evaluated only when something was raised
        print(f"odelint: error: {error}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("odelint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_CLEAN
    except Exception as error:  # the last line of defence: no traceback for users
        print(f"odelint: internal error: {type(error).__name__}: {error} (this is a bug; please report it)",
              file=sys.stderr)
        return EXIT_ERROR


def _user_errors() -> tuple[type[Exception], ...]:
    """The errors that are the user's mistake: one line, exit code 2."""
    from odelint.files.config import ConfigError
    from odelint.files.selection import SelectionError

    return UsageError, ConfigError, SelectionError


def _per_file_ignores(values: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    parsed = []
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern:
            raise UsageError(f"--per-file-ignores expects GLOB:CODES, got {value!r}")
        parsed.append((pattern, tuple(_codes(codes))))
    return tuple(parsed)


def _overrides(args: argparse.Namespace) -> Overrides:
    from odelint.api.registry import known_codes
    from odelint.files.config import Overrides, parse_config_options
    from odelint.files.selection import check_selectors
    from odelint.files.versions import TargetError, parse_targets

    known = known_codes()
    if args.select is not None and not args.select:
        raise UsageError("--select '' selects no rule; name codes or prefixes (e.g. --select ODL), "
                         "or --ignore the ones to leave out")
    per_file = _per_file_ignores(args.per_file_ignores)
    check_selectors([*(args.select or []), *args.extend_select, *args.ignore,
                     *(c for _, codes in per_file for c in codes)], known, "command line")
    config_file, settings = parse_config_options(args.config, known)
    try:
        targets = parse_targets(args.target_version, "--target-version")
    except TargetError as error:
        raise UsageError(str(error)) from None
    return Overrides(
        select=tuple(args.select) if args.select is not None else None,
        extend_select=tuple(args.extend_select),
        ignore=tuple(args.ignore),
        exclude=tuple(args.exclude) if args.exclude is not None else None,
        extend_exclude=tuple(args.extend_exclude),
        extend_include=tuple(args.extend_include),
        per_file_ignores=per_file,
        unsafe_fixes=args.unsafe_fixes,
        force_exclude=args.force_exclude,
        config=config_file,
        isolated=args.isolated,
        preview=args.preview,
        settings=settings,
        target_versions=tuple(targets.items()),
    )


def _mode(args: argparse.Namespace) -> str:
    from odelint.engine import result

    chosen = [flag for flag in ("fix", "diff", "add_noqa") if getattr(args, flag)]
    if len(chosen) > 1 and set(chosen) != {"fix", "diff"}:
        raise UsageError("choose one of --fix, --diff and --add-noqa")
    if "diff" in chosen:
        return result.DIFF
    return {"fix": result.FIX, "add_noqa": result.ADD_NOQA}.get(chosen[0], result.CHECK) if chosen else result.CHECK


def _check(args: argparse.Namespace) -> int:
    if args.watch:
        from odelint.faces import watch  # imports watchfiles: only for --watch

        return watch.run(args, lambda: _check_once(args))
    return _check_once(args)


def _limits(args: argparse.Namespace) -> tuple[int, float]:
    """What one file may cost: (characters of source, seconds), runner.Options' limits."""
    from odelint.engine import runner

    source, seconds = runner.MAX_SOURCE, runner.MAX_SECONDS
    if args.max_file_size is not None:
        if args.max_file_size <= 0:
            raise UsageError("--max-file-size must be a positive number of megabytes")
        source = int(args.max_file_size * 1_000_000)
    if args.file_timeout is not None:
        if args.file_timeout < 0:
            raise UsageError("--file-timeout must be 0 (no limit) or a positive number of seconds")
        seconds = args.file_timeout
    return source, seconds


def _check_once(args: argparse.Namespace) -> int:
    mode = _mode(args)
    paths = args.paths or (["-"] if args.stdin_filename else ["."])  # as Ruff: a name for stdin means stdin
    recorder = None
    if _replayable(args, mode, paths):
        from odelint.analysis.project import stamp
        from odelint.engine.result import RunResult
        from odelint.files import runs
        from odelint.files.cache import CACHE_DIR

        folder = args.cache_dir or os.path.join(os.getcwd(), CACHE_DIR)
        run_key = runs.key(vars(args).items(), os.path.abspath(os.getcwd()))
        replay = runs.replay(folder, run_key, stamp)
        if replay is not None:
            from odelint.api.finding import Finding

            result = RunResult()
            result.findings = [Finding.from_dict(finding) for finding in replay.findings]
            result.files = replay.files
            return _report(args, mode, result, None, replay.unsafe_shown)
        recorder = runs.Recorder(folder, run_key, stamp)
    try:
        return _check_linting(args, mode, paths, recorder)
    finally:
        if recorder is not None:
            recorder.stop()


def _replayable(args: argparse.Namespace, mode: str, paths: list[str]) -> bool:
    """A plain `check` of files on disk, with the cache: a record may answer it (odelint.files.runs)."""
    from odelint.engine.result import CHECK

    return (mode == CHECK and not args.no_cache and "-" not in paths and not args.stdin_filename
            and not args.show_files and not args.show_settings)


def _check_linting(args: argparse.Namespace, mode: str, paths: list[str], recorder: runs.Recorder | None) -> int:
    from odelint.api.registry import known_codes
    from odelint.engine import runner
    from odelint.faces import progress
    from odelint.files.config import ConfigResolver

    overrides = _overrides(args)
    resolver = ConfigResolver(overrides, known_codes())
    if args.show_files or args.show_settings:
        from odelint.faces import show

        if args.show_settings:
            show.settings(paths, resolver, sys.stdout)
            return EXIT_CLEAN
        errors = show.files(paths, resolver, sys.stdout)
        for path, reason in errors:
            print(f"odelint: error: {path}: {reason}", file=sys.stderr)
        return EXIT_ERROR if errors else EXIT_CLEAN
    stdin = None
    if "-" in paths:
        stdin = (args.stdin_filename or "-", sys.stdin.buffer.read())
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    max_source, max_seconds = _limits(args)
    options = runner.Options(mode=mode, jobs=args.jobs, use_cache=not args.no_cache, cache_dir=args.cache_dir,
                             progress=progress.for_stream(sys.stderr), max_source=max_source, max_seconds=max_seconds,
                             recorder=recorder)
    result = runner.run(paths, resolver, options, stdin)

    unsafe_shown = bool(overrides.unsafe_fixes) or _settings_unsafe(resolver)
    if recorder is not None and not (result.errors or result.internal_errors or result.skipped):
        recorder.store([finding.to_dict() for finding in result.findings], result.files, unsafe_shown)
    return _report(args, mode, result, stdin, unsafe_shown)


def _report(args: argparse.Namespace, mode: str, result: RunResult, stdin: tuple[str, bytes] | None,
            unsafe_shown: bool) -> int:
    from odelint.engine.result import DIFF, FIX

    for path, reason in result.skipped:
        print(f"odelint: warning: {path}: {reason}", file=sys.stderr)
    for path, reason in result.errors:
        if (path, reason) not in result.config_errors:  # a configuration error is reported once, as ODL001
            print(f"odelint: error: {path}: {reason}", file=sys.stderr)
    for path, message in result.internal_errors:
        print(f"odelint: error: {path}: {message}", file=sys.stderr)
    if stdin is not None and mode == FIX:
        fixed = result.stdout_data if result.stdout_data is not None else stdin[1]
        sys.stdout.buffer.write(fixed)
        sys.stdout.flush()
        # standard output is the fixed code; what is left to report goes to standard error (as Ruff)
        _print_findings(args, result, (stdin[0], fixed), unsafe_shown, sys.stderr, colour_plain())
        return _exit_code(args, mode, result)
    with _output(args) as (stream, paint):
        if mode == DIFF:
            stream.write("".join(result.diffs))
            if not args.quiet:
                print(f"Would fix {result.fixes_applied} finding(s) in {len(result.changed)} file(s).", file=sys.stderr)
        else:
            _print_findings(args, result, stdin, unsafe_shown, stream, paint)
    return _exit_code(args, mode, result)


@contextlib.contextmanager
def _output(args: argparse.Namespace) -> Iterator[tuple[TextIO, colour.Paint]]:
    """Standard output (coloured on a terminal), or the `--output-file` (never coloured)."""
    from odelint.faces import colour

    if not args.output_file:
        yield sys.stdout, colour.painter(args.format in ("text", "concise") and colour.wanted(sys.stdout))
        return
    folder = os.path.dirname(os.path.abspath(args.output_file))
    try:
        os.makedirs(folder, exist_ok=True)
        handle = open(args.output_file, "w", encoding="utf-8", newline="\n")
    except OSError as error:
        raise UsageError(f"cannot write --output-file {args.output_file}: {error.strerror or error}") from None
    with handle:
        yield handle, colour.plain


def colour_plain() -> colour.Paint:
    from odelint.faces import colour

    return colour.plain


def _settings_unsafe(resolver: ConfigResolver) -> bool:
    from odelint.files.config import ConfigError

    try:
        return resolver.for_path(resolver.cwd).unsafe_fixes
    except ConfigError:
        return False


def _unread(result: RunResult) -> list[Finding]:
    """Files that could not be read or linted are findings too (ODL001), in every format. (The
    engine's rules are imported only when there are some: a warm run imports no rule class.)"""
    if not result.errors:
        return []
    from odelint.api.engine_rules import IoErrorRule

    return [IoErrorRule.finding(path, reason, result.config_errors.get((path, reason), 1))
            for path, reason in result.errors]


def _print_findings(args, result: RunResult, stdin, unsafe_shown: bool, stream: TextIO,
                    paint: colour.Paint) -> None:
    from odelint.api.finding import Finding
    from odelint.faces.report import text as text_report

    def lines_of(path: str, cell: int | None = None) -> list[str] | None:
        if cell is not None:
            from odelint.files.notebook import cell_lines

            return cell_lines(stdin[1] if stdin is not None and path == stdin[0] else path, cell)
        from odelint.files import lines

        if stdin is not None and path == stdin[0]:
            return lines.bare(stdin[1].decode("utf-8", errors="replace"))
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as handle:
                return lines.bare(handle.read())
        except OSError:
            return None

    shown = sorted([*result.findings, *_unread(result)], key=Finding.sort_key)
    if args.format in ("text", "concise") and args.statistics:
        stream.write(text_report.statistics(shown, unsafe_shown))
    else:
        stream.write(report.render(args.format, shown, lines_of=lines_of, unsafe_fixes=unsafe_shown,
                                   quiet=args.quiet, errors=result.errors + result.internal_errors,
                                   fixed=result.fixes_applied, internal_errors=len(result.internal_errors),
                                   show_fixes=args.show_fixes and not args.fix, paint=paint, files=result.files,
                                   summary=not args.add_noqa))
    if args.format in ("text", "concise") and args.show_fixes and args.fix:
        stream.write(text_report.fixed_listing(result.fixed_by_file))
    if args.format in ("text", "concise") and not args.quiet and args.add_noqa:
        added = result.fixes_applied
        print(f"Added {added} noqa directive{'' if added == 1 else 's'}.", file=stream)


def _exit_code(args, mode: str, result: RunResult) -> int:
    from odelint.engine.result import ADD_NOQA, DIFF

    if result.errors or result.internal_errors:
        return EXIT_ERROR
    if mode == DIFF:
        return EXIT_FINDINGS if result.changed and not args.exit_zero else EXIT_CLEAN
    if result.findings and not args.exit_zero and mode != ADD_NOQA:
        return EXIT_FINDINGS
    if args.exit_non_zero_on_fix and result.fixes_applied:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _rule(args: argparse.Namespace) -> int:
    import json

    from odelint.api import docs
    from odelint.api.registry import info_for, rule_infos

    if args.all:
        chosen = list(rule_infos())
    elif args.code:
        rule = info_for(args.code)
        if rule is None:
            raise UsageError(f"unknown rule {args.code!r}; `odelint rules` lists them")
        chosen = [rule]
    else:
        raise UsageError("name a rule (`odelint rule ODL201`) or pass --all")
    if args.format == "json":
        print(json.dumps([docs.as_dict(rule) for rule in chosen], indent=2))
    else:
        print("\n".join(docs.render(rule) for rule in chosen), end="")
    return EXIT_CLEAN


def _rules(args: argparse.Namespace) -> int:
    import json

    from odelint.api import docs
    from odelint.api.registry import rule_infos

    rules = list(rule_infos())
    if args.format == "json":
        print(json.dumps([docs.as_dict(rule) for rule in rules], indent=2))
    elif args.format == "markdown":
        print(docs.markdown(rules), end="")
    else:
        width = max(len(rule.name) for rule in rules)
        for rule in rules:
            print(f"{rule.code}  {rule.name:<{width}}  {docs.fix_label(rule):<11}  {docs.rule_set(rule):<7}  "
                  f"{rule.summary}")
    return EXIT_CLEAN
