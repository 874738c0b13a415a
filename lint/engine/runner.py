"""Lint (or fix) many files: consult the cache, fan out to worker processes, write back.

The parent hashes each file for the cache lookup and keeps no file contents: workers read
the files they lint (and key their results by the bytes they read), so no source text is
pickled through the pool and no worker is forked holding the whole tree in memory.

A warm run answers every file from the cache, so what only linting needs (the engine and
through it the rules and LibCST, the process pool, difflib) is imported when a file is linted."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence

from odelint.analysis import project
from odelint.api.finding import SYNTAX_ERROR_CODE, Finding, Safety
from odelint.api.records import NamedTuple
from odelint.api.registry import file_patterns
from odelint.engine.collector import fewer_collections, sweeper
from odelint.engine.deferred import load
from odelint.engine.once import linted_once
from odelint.engine.result import ADD_NOQA, CHECK, DIFF, FIX, RunResult
from odelint.files import cache as result_cache
from odelint.files.config import ConfigError, ConfigResolver
from odelint.files.discover import Target, discover, shown_path
from odelint.files.fileio import (
    NotRegular,
    SourceError,
    atomic_write,
    decode,
    display,
    encode,
    read_regular,
)
from odelint.files.kinds import NOT_LINTED, NOTEBOOK, NOTEBOOK_SUFFIX, PYTHON, TEXT, kind_of
from odelint.files.versions import describe

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    import concurrent.futures
    from typing import Protocol

    from odelint.files.notebook import Notebook
    from odelint.files.runs import Recorder
    from packaging.version import Version

    class Progress(Protocol):
        def update(self, done: int, total: int) -> None: ...

        def close(self) -> None: ...

# What one file may cost. LibCST's parser holds about 2,000 bytes of memory per byte of a long
# line (a 5 MB one-line file needs ~10 GB and minutes): larger sources are reported, not linted.
MAX_SOURCE = 2_000_000
MAX_SECONDS = 120.0
_MAX_READ_BYTES = 256 * 1024 * 1024  # a notebook's outputs may be large; a device named on the line is not read forever
WORKER_DIED = ("the worker process linting this file died (killed, or out of memory); not linted "
               "(lower --max-file-size to skip such files)")


class Options(NamedTuple):
    """How a run goes: its mode, its workers and its limits."""

    mode: str = CHECK
    jobs: int | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    progress: Progress | None = None  # told of every finished file (the terminal's progress line)
    max_source: int = MAX_SOURCE  # characters of source; a larger file is reported (ODL001), not linted
    max_seconds: float = MAX_SECONDS  # linting one file longer than this stops and is reported (ODL001)
    recorder: Recorder | None = None  # records a `check` for the next one to replay (odelint.files.runs)


class Task(NamedTuple):
    """One file for a worker, with everything the worker needs to lint it."""

    path: str
    data: bytes | None           # None: the worker reads `path`
    codes: frozenset[str]
    kind: str                    # PYTHON, NOTEBOOK or TEXT
    mode: str
    unsafe: bool
    versions: Mapping[str, Version | None] = {}  # the JAX stack's targets (read, never changed)
    options: frozenset[str] = frozenset()  # settings rules read (Settings.options)
    max_source: int = MAX_SOURCE
    max_seconds: float = MAX_SECONDS
    run: tuple[int, int] | None = None  # the run it belongs to: where files are is looked up once per run


class Outcome:
    """What a worker sends back for a file: plain data, so it crosses processes."""

    def __init__(self, path: str, error: str | None = None) -> None:
        self.path = path
        self.findings: list[dict] = []
        self.error = error
        self.crashes: list[str] = []
        self.new_data: bytes | None = None
        self.diff: str | None = None
        self.applied = 0
        self.applied_codes: dict[str, int] = {}
        self.cache_key: str | None = None  # of the bytes the findings are for; None for stdin
        self.relevant: list[str] = []  # the rules that could fire on those bytes
        self.depends: dict[str, list[int] | None] = {}  # paths looked up -> stamp
        self.read_digest: str | None = None  # the digest of the bytes that new_data replaces
        self.skipped: str | None = None  # why a file that is not Python was left alone


class _TooSlow(BaseException):
    """Linting one file ran past its time; a BaseException, so no rule's `except` swallows it."""


def process(task: Task) -> Outcome:
    """Everything that happens to one file's bytes; runs in a worker process."""
    outcome, size = Outcome(task.path), _size(task)
    sweeper.before(size, project.forget)
    with (project.places(task.run), project.recording() as outcome.depends, _time_limit(task.max_seconds),
          linted_once()):  # the outcome holds the findings as data: the models can go
        try:
            outcome = _process(task, outcome)
        except _TooSlow:
            outcome = Outcome(task.path, error=f"took longer than {task.max_seconds:g} s to lint; stopped "
                                               "(raise the limit with --file-timeout)")
    sweeper.linted(size, project.forget)
    return outcome


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Interrupt Python code that runs past `seconds` (only the main thread gets signals:
    elsewhere, as in the language server's threads, nothing is limited)."""
    import signal
    import threading

    if seconds <= 0 or not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(number: int, frame: object) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _process(task: Task, outcome: Outcome) -> Outcome:
    from odelint.engine import core as engine
    from odelint.engine import noqa
    from odelint.engine.notebooks import cell_diff, place
    from odelint.engine.relevance import relevant_codes
    from odelint.files.notebook import NotebookError, NotPythonNotebook
    from odelint.files.notebook import read as read_notebook

    data = task.data
    notebook: Notebook | None = None
    python = task.kind != TEXT
    try:
        if data is None:
            data = _read(task.path)
            settings = _described(task.versions, task.options)
            outcome.cache_key = result_cache.key(data, task.path, task.kind, settings)
        if task.kind == NOTEBOOK:
            notebook = read_notebook(data)
            text = notebook.source
        else:
            source = decode(data, python)
            text = source.text
    except NotPythonNotebook as error:
        outcome.skipped = str(error)
        return outcome
    except (SourceError, NotebookError) as error:
        outcome.error = str(error)
        return outcome
    large = len(text) > task.max_source
    relevant = relevant_codes(text, task.path, python) if large or outcome.cache_key is not None else frozenset()
    if large and relevant & task.codes - {SYNTAX_ERROR_CODE}:
        # Only a rule's parse is capped: CPython's syntax check costs little at any size.
        outcome.error = (f"{len(text):,} characters of source, over the limit of {task.max_source:,} for its rules; "
                         "not linted (raise the limit with --max-file-size MB)")
        return outcome
    if outcome.cache_key is not None:
        outcome.relevant = sorted(relevant)
    try:
        if task.mode in (FIX, DIFF):
            fixed = engine.fix_source(text, task.path, task.codes, unsafe=task.unsafe, python=python,
                                      versions=task.versions, saved=notebook.saved() if notebook else (),
                                      options=task.options)
            findings, crashes, new_text = fixed.findings, fixed.crashes, fixed.source
            outcome.applied = fixed.applied
            outcome.applied_codes = dict(fixed.applied_codes)
        else:
            result = engine.lint_source(text, task.path, task.codes, python=python, versions=task.versions,
                                        options=task.options, saved=notebook.saved() if notebook else ())
            findings, crashes, new_text = result.findings, result.crashes, text
            if task.mode == ADD_NOQA:
                new_text = noqa.add_noqa(text, findings, python)
                outcome.applied = noqa.added(text, new_text)
                if new_text != text:
                    findings = engine.lint_source(new_text, task.path, task.codes, python=python,
                                                  versions=task.versions, options=task.options).findings
    except RecursionError:
        outcome.findings = [engine.too_deep(task.path).to_dict()]
        return outcome
    outcome.crashes = [crash.message() for crash in crashes]
    if new_text != text and notebook is not None:
        try:
            outcome.new_data, changed = notebook.rewrite(new_text)
            outcome.diff = cell_diff(task.path, changed)
        except NotebookError as error:  # keep the notebook; report what it holds now
            outcome.crashes.append(str(error))
            outcome.applied, new_text = 0, text
            findings = engine.lint_source(text, task.path, task.codes, python=True, versions=task.versions,
                                          options=task.options).findings
    elif new_text != text:
        import difflib

        from odelint.files import lines

        outcome.new_data = encode(source, new_text)
        outcome.diff = "".join(difflib.unified_diff(
            lines.split(text), lines.split(new_text),
            fromfile=f"a/{display(task.path)}", tofile=f"b/{display(task.path)}"))
    if outcome.new_data is not None:
        outcome.read_digest = result_cache.content(data)
    if notebook is not None:
        findings = place(findings, notebook)
    outcome.findings = [finding.to_dict() for finding in findings]
    return outcome


def _described(versions: Mapping[str, Version | None], options: frozenset[str]) -> str:
    """The target versions and the rule settings in a cache key (no text for settings that are
    not set, so keys stay as they were)."""
    return describe(versions) + "".join(f";{key}" for key in sorted(options))


def _read(path: str, regular: bool = True) -> bytes:
    """A file's bytes; `regular=False` reads whatever the path is (a pipe named on the
    command line), which must then be read only once."""
    try:
        if regular:
            data = read_regular(path, _MAX_READ_BYTES)
        else:
            with open(path, "rb") as handle:
                data = handle.read(_MAX_READ_BYTES + 1)
    except NotRegular as error:
        raise SourceError(f"{error}; skipped") from None
    except OSError as error:
        raise SourceError(error.strerror or str(error)) from None
    if len(data) > _MAX_READ_BYTES:
        raise SourceError(f"larger than {_MAX_READ_BYTES // 2**20} MiB; skipped")
    return data


def _size(task: Task) -> int:
    if task.data is not None:
        return len(task.data)
    try:
        return os.stat(task.path).st_size
    except OSError:
        return 0


# Below this much source, starting worker processes costs more than it saves (measured on a
# 2-core machine: a 30-file, 15 KB project took 1.80 s with two workers, 1.44 s in-process).
PARALLEL_FROM_BYTES = 256 * 1024


def _run_tasks(tasks: Sequence[Task], jobs: int, progress: Progress | None = None) -> list[Outcome]:
    """Outcomes in task order. Workers get the largest files first, in small chunks, so no
    worker is left with a long file while the others idle at the end."""
    try:
        fewer_collections()
        if jobs <= 1 or len(tasks) < 2 * jobs or sum(map(_size, tasks)) < PARALLEL_FROM_BYTES:
            return [_reported(process(task), index, len(tasks), progress) for index, task in enumerate(tasks)]
        load("libcst")  # once, before forking, rather than once per worker
        order = sorted(range(len(tasks)), key=lambda index: _size(tasks[index]), reverse=True)
        chunk = max(1, min(4, len(tasks) // (jobs * 16)))
        outcomes: list[Outcome | None] = [None] * len(tasks)
        counter = [0]

        def finished(index: int, outcome: Outcome) -> None:
            outcomes[index] = _reported(outcome, counter[0], len(tasks), progress)
            counter[0] += 1

        pending = [order[start:start + chunk] for start in range(0, len(order), chunk)]
        suspects: list[int] = []
        while pending:
            pending, died = _pool_round(tasks, pending, jobs, finished)
            suspects += died
        for index in suspects:  # alone, so a death names its file and takes no other with it
            finished(index, _alone(tasks[index]))
        return outcomes  # type: ignore[return-value]
    finally:
        if progress is not None:
            progress.close()


def _pool(jobs: int) -> concurrent.futures.ProcessPoolExecutor:
    import concurrent.futures
    import multiprocessing

    context = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
    return concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_exit_with_parent,
                                                  initargs=(os.getpid(),))


def _process_chunk(chunk: list[Task]) -> list[Outcome]:
    return [process(task) for task in chunk]


def _pool_round(tasks: Sequence[Task], chunks: list[list[int]], jobs: int,
                finished: Callable[[int, Outcome], None]) -> tuple[list[list[int]], list[int]]:
    """Run `chunks` of task indices in one pool. When a worker dies (out of memory, killed) the
    pool breaks: the chunks that were running are suspects, to be run alone; those not yet
    started go to the next round. Returns (next round's chunks, suspects)."""
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool

    with _pool(jobs) as pool:
        futures = {pool.submit(_process_chunk, [tasks[i] for i in chunk]): chunk for chunk in chunks}
        running: set[concurrent.futures.Future] = set()
        reported: set[concurrent.futures.Future] = set()
        waiting = set(futures)
        while waiting:
            done, waiting = concurrent.futures.wait(waiting, timeout=0.5,
                                                    return_when=concurrent.futures.FIRST_COMPLETED)
            for future in done:
                if future.exception() is None:  # the progress line moves as files finish
                    reported.add(future)
                    for index, outcome in zip(futures[future], future.result(), strict=True):
                        finished(index, outcome)
            if any(isinstance(future.exception(), BrokenProcessPool) for future in done):
                break  # a worker died: `running` still names the chunks that were running then
            running = {future for future in waiting if future.running()}
    left = []  # every future is done now: the pool has shut down
    for future, chunk in futures.items():
        if future in reported:
            continue
        error = future.exception()
        if isinstance(error, BrokenProcessPool):
            left.append(future)
        elif error is not None:  # a bug, not a death: the chunk's files say so, the rest goes on
            for index in chunk:
                finished(index, Outcome(tasks[index].path, error=f"internal error: {type(error).__name__}: {error}"))
        else:
            for index, outcome in zip(chunk, future.result(), strict=True):
                finished(index, outcome)
    if not left:
        return [], []
    suspects = [index for future in left if future in running or len(left) == 1 for index in futures[future]]
    retry = [futures[future] for future in left if not (future in running or len(left) == 1)]
    if not suspects:  # it died before this side saw anything start: every chunk left is suspect
        return [], [index for chunk in retry for index in chunk]
    return retry, suspects


def _alone(task: Task) -> Outcome:
    """One task in a pool of its own: if its worker dies or hangs past the time limit, it is
    that file's doing."""
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool

    pool = _pool(1)
    future = pool.submit(process, task)
    try:
        return future.result(timeout=task.max_seconds + 30 if task.max_seconds > 0 else None)
    except BrokenProcessPool:
        return Outcome(task.path, error=WORKER_DIED)
    except concurrent.futures.TimeoutError:
        for worker in list(getattr(pool, "_processes", {}).values()):
            worker.kill()
        return Outcome(task.path, error=f"took longer than {task.max_seconds:g} s to lint; stopped "
                                        "(raise the limit with --file-timeout)")
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _reported(outcome: Outcome, index: int, total: int, progress: Progress | None) -> Outcome:
    if progress is not None:
        progress.update(index + 1, total)
    return outcome


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL runs no cleanup) stops instead of lingering."""
    import threading

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="odelint-parent-watch").start()


def _fixable(findings: list[dict], unsafe: bool) -> bool:
    return any(f["fixable"] and (unsafe or f["fix_safety"] == Safety.SAFE.value) for f in findings)


def run(paths: Sequence[str], resolver: ConfigResolver, options: Options,
        stdin: tuple[str, bytes] | None = None) -> RunResult:
    """Lint or fix `paths` (and stdin, given as (display path, bytes))."""
    result = RunResult()
    cache = result_cache.Cache(options.cache_dir or os.path.join(resolver.cwd, result_cache.CACHE_DIR),
                               project.stamp) if options.use_cache else None
    if cache is not None:
        resolver.verdicts.load(cache.verdicts)
    discovered = discover([p for p in paths if p != "-"], resolver, (*file_patterns(), f"*{NOTEBOOK_SUFFIX}"))
    result.errors.extend(discovered.errors)
    result.config_errors.update(discovered.config_errors)
    result.skipped.extend(discovered.skipped)
    targets = list(discovered.targets)
    if stdin is not None:
        targets.append(Target(stdin[0], True))
    if cache is not None:
        cache.listed(discovered.listings)
        if cache.warning is not None:
            result.skipped.append((display(cache.file), cache.warning))

    tasks: list[Task] = []
    this_run = (os.getpid(), time.monotonic_ns())
    cached: list[tuple[str, list[dict]]] = []
    answered: list[tuple[str, os.stat_result]] = []  # each file's absolute path and status, for the recorder
    hit_keys: list[str] = []
    recordable = options.recorder is not None and cache is not None and stdin is None
    described: dict[tuple[int, bool], str] = {}  # the versions and options in cache keys, per settings
    for target in targets:
        # the absolute path, once (a walk's come with it): each `abspath` of a relative one asks
        # the OS for the current folder
        absolute = target.absolute or (os.path.abspath(target.path) if target.path != "-" else resolver.cwd)
        try:
            settings = resolver.for_file(absolute) if target.path != "-" else resolver.for_path(absolute)
        except ConfigError as error:  # reported once, at the configuration file's line
            where = shown_path(error.path) if error.path else target.path
            if (where, error.reason) not in result.config_errors:
                result.config_errors[(where, error.reason)] = error.line
                result.errors.append((where, error.reason))
            continue
        codes = settings.enabled(absolute)
        kind = kind_of(target.path)
        unsafe = settings.unsafe_fixes
        versions = settings.versions_for(codes)
        data: bytes | None = None  # None: the worker reads the file
        if stdin is not None and target.path == stdin[0]:
            data, kind = stdin[1], kind or PYTHON
        elif kind is None and target.explicit and target.regular:
            result.skipped.append((target.path, NOT_LINTED))
            continue
        elif not target.regular:  # a pipe (`<(cat t.py)`): read once, here, or the worker finds it empty
            try:
                data = _read(target.path, regular=False)
            except SourceError as error:
                result.errors.append((target.path, str(error)))
                continue
        elif cache is not None:
            digest = cache.digest(absolute, target.status) if target.status is not None else None
            if digest is None:
                try:
                    digest = result_cache.content(_read(target.path))
                except SourceError as error:
                    result.errors.append((target.path, str(error)))
                    continue
                if target.status is not None:
                    cache.record(absolute, target.status, digest)
            settings_key = (id(settings), bool(versions))  # the resolver keeps every settings object alive
            if settings_key not in described:
                described[settings_key] = _described(versions, settings.options)
            cache_key, answers = result_cache.addressed(digest, absolute, kind or PYTHON, described[settings_key])
            hit = cache.get(cache_key, codes, answers)
            if hit is not None and (options.mode == CHECK or not _needs_work(hit, options.mode, unsafe)):
                cached.append((target.path, hit))
                if recordable and target.status is not None:
                    answered.append((absolute, target.status))
                    hit_keys.append(cache_key)
                continue
        if recordable:
            if target.status is None or data is not None:
                recordable = False
            else:
                answered.append((absolute, target.status))
        tasks.append(Task(target.path, data, codes, kind or PYTHON,  # PYTHON: a pattern added to `include`
                          options.mode, unsafe, versions, settings.options, options.max_source, options.max_seconds,
                          this_run))

    if cache is not None:
        cache.keep_verdicts(resolver.verdicts)  # discovery's and the settings' (per-file-ignores)
    if options.recorder is not None:
        options.recorder.stop()
    outcomes = _run_tasks(tasks, options.jobs or os.cpu_count() or 1, options.progress)
    result.files = len(cached) + sum(outcome.error is None and outcome.skipped is None for outcome in outcomes)
    for path, findings in cached:
        result.findings.extend(_findings(path, findings))
    for task, outcome in zip(tasks, outcomes, strict=True):
        _collect(task, outcome, options, result, stdin)
        if cache is not None and outcome.cache_key is not None and outcome.error is None \
                and not outcome.crashes and outcome.new_data is None:
            cache.put(outcome.cache_key, outcome.relevant, task.codes, outcome.findings, outcome.depends,
                      result_cache.slot(task.path, task.kind, _described(task.versions, task.options)))
    if recordable and cache is not None and options.recorder is not None:
        depends = cache.depends_of(hit_keys)
        for outcome in outcomes:
            depends.update(outcome.depends)
        options.recorder.answered(answered, depends)
    if cache is not None:
        cache.save()
    result.findings.sort(key=Finding.sort_key)
    _displayable(result)
    return result


def _displayable(result: RunResult) -> None:
    """Paths as they can be printed: a file name that is not valid UTF-8 is shown escaped."""
    for finding in result.findings:
        finding.path = display(finding.path)
    for listing in (result.errors, result.skipped, result.internal_errors):
        listing[:] = [(display(path), reason) for path, reason in listing]


def stdin_path(stdin: tuple[str, bytes] | None) -> str | None:
    return stdin[0] if stdin is not None else None


def _needs_work(findings: list[dict], mode: str, unsafe: bool) -> bool:
    if mode == ADD_NOQA:
        return bool(findings)
    return _fixable(findings, unsafe)


def _findings(path: str, dicts: list[dict]) -> list[Finding]:
    return [Finding.from_dict({**d, "path": path}) for d in dicts]


def _collect(task: Task, outcome: Outcome, options: Options, result: RunResult,
             stdin: tuple[str, bytes] | None) -> None:
    if outcome.error is not None:
        result.errors.append((task.path, outcome.error))
        return
    if outcome.skipped is not None:
        result.skipped.append((task.path, outcome.skipped))
        return
    result.internal_errors.extend((task.path, message) for message in outcome.crashes)
    if outcome.new_data is None:
        result.findings.extend(_findings(task.path, outcome.findings))
        return
    if options.mode == DIFF:
        result.diffs.append(outcome.diff or "")
    elif task.path == stdin_path(stdin):
        result.stdout_data = outcome.new_data
    else:
        try:
            if task.data is not None:
                raise SourceError("not a regular file; its fixes cannot be written back")
            if result_cache.content(_read(task.path)) != outcome.read_digest:
                raise SourceError("changed on disk while odelint was fixing it; not written")
            atomic_write(task.path, outcome.new_data)
        except (SourceError, OSError) as error:
            result.errors.append((task.path, str(error) if isinstance(error, SourceError) else
                                  f"cannot write: {error.strerror or error}"))
            # Not fixed: what the file holds is still wrong, and reported as such.
            unfixed = process(task._replace(mode=CHECK))
            result.findings.extend(_findings(task.path, unfixed.findings if unfixed.error is None else []))
            return
    result.findings.extend(_findings(task.path, outcome.findings))
    result.changed.append(task.path)
    result.fixes_applied += outcome.applied  # counted once the fixed text is written (or shown)
    if outcome.applied_codes:
        result.fixed_by_file[task.path] = Counter(outcome.applied_codes)
