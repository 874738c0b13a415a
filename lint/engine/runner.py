"""Lint (or fix) many files: consult the cache, fan out to worker processes, write back.

The parent hashes each file for the cache lookup and keeps no file contents: workers read
the files they lint (and key their results by the bytes they read), so no source text is
pickled through the pool and no worker is forked holding the whole tree in memory.

A warm run answers every file from the cache, so what only linting needs (the engine and
through it the rules and LibCST, the process pool, difflib) is imported when a file is linted."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Protocol

from odelint.api.finding import Finding, Safety
from odelint.api.registry import file_patterns, uses_versions
from odelint.engine.collector import fewer_collections
from odelint.engine.deferred import load
from odelint.files import cache as result_cache
from odelint.files.config import ConfigError, ConfigResolver
from odelint.files.discover import Target, discover
from odelint.files.fileio import SourceError, atomic_write, decode, encode
from odelint.files.kinds import NOT_LINTED, NOTEBOOK, PYTHON, TEXT, kind_of
from odelint.files.notebook import SUFFIX, Notebook, NotebookError, NotPythonNotebook
from odelint.files.notebook import read as read_notebook
from odelint.files.versions import describe
from packaging.version import Version

CHECK, FIX, DIFF, ADD_NOQA = "check", "fix", "diff", "add-noqa"


class Progress(Protocol):
    def update(self, done: int, total: int) -> None: ...

    def close(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class Options:
    mode: str = CHECK
    jobs: int | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    progress: Progress | None = None  # told of every finished file (the terminal's progress line)


@dataclasses.dataclass(frozen=True)
class Task:
    path: str
    data: bytes | None           # None: the worker reads `path`
    codes: frozenset[str]
    kind: str                    # PYTHON, NOTEBOOK or TEXT
    mode: str
    unsafe: bool
    versions: Mapping[str, Version | None] = dataclasses.field(default_factory=dict)  # the JAX stack's targets


@dataclasses.dataclass
class Outcome:
    path: str
    findings: list[dict] = dataclasses.field(default_factory=list)
    error: str | None = None
    crashes: list[str] = dataclasses.field(default_factory=list)
    new_data: bytes | None = None
    diff: str | None = None
    applied: int = 0
    applied_codes: dict[str, int] = dataclasses.field(default_factory=dict)
    cache_key: str | None = None  # of the bytes the findings are for; None for stdin
    relevant: list[str] = dataclasses.field(default_factory=list)  # the rules that could fire on those bytes
    depends: dict[str, list[int]] = dataclasses.field(default_factory=dict)  # project files read: path -> stamp
    read_digest: str | None = None  # sha256 of the bytes that new_data replaces
    skipped: str | None = None  # why a file that is not Python was left alone


@dataclasses.dataclass
class RunResult:
    findings: list[Finding] = dataclasses.field(default_factory=list)
    errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    internal_errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    fixes_applied: int = 0
    fixed_by_file: dict[str, Counter] = dataclasses.field(default_factory=dict)  # path -> fixes per code
    changed: list[str] = dataclasses.field(default_factory=list)
    diffs: list[str] = dataclasses.field(default_factory=list)
    files: int = 0
    stdout_data: bytes | None = None  # fixed stdin, for `--fix -`
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (path, why): warnings


def process(task: Task) -> Outcome:
    """Everything that happens to one file's bytes; runs in a worker process."""
    from odelint.analysis import project

    outcome = Outcome(task.path)
    with project.recording() as outcome.depends:
        return _process(task, outcome)


def _process(task: Task, outcome: Outcome) -> Outcome:
    from odelint.engine import core as engine
    from odelint.engine import noqa
    from odelint.engine.notebooks import cell_diff, place
    from odelint.engine.relevance import relevant_codes

    data = task.data
    notebook: Notebook | None = None
    python = task.kind != TEXT
    try:
        if data is None:
            data = _read(task.path)
            outcome.cache_key = result_cache.key(data, task.path, task.kind, describe(task.versions))
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
    if outcome.cache_key is not None:
        outcome.relevant = sorted(relevant_codes(text, task.path, python))
    try:
        if task.mode in (FIX, DIFF):
            fixed = engine.fix_source(text, task.path, task.codes, unsafe=task.unsafe, python=python,
                                      versions=task.versions)
            findings, crashes, new_text = fixed.findings, fixed.crashes, fixed.source
            outcome.applied = fixed.applied
            outcome.applied_codes = dict(fixed.applied_codes)
        else:
            result = engine.lint_source(text, task.path, task.codes, python=python, versions=task.versions)
            findings, crashes, new_text = result.findings, result.crashes, text
            if task.mode == ADD_NOQA:
                new_text = noqa.add_noqa(text, findings, python)
                if new_text != text:
                    findings = engine.lint_source(new_text, task.path, task.codes, python=python,
                                                  versions=task.versions).findings
    except RecursionError:
        too_deep = engine.syntax_finding(task.path, 1, 1, "the file is nested too deeply to analyse")
        outcome.findings = [too_deep.to_dict()]
        return outcome
    outcome.crashes = [crash.message() for crash in crashes]
    if new_text != text and notebook is not None:
        try:
            outcome.new_data, changed = notebook.rewrite(new_text)
            outcome.diff = cell_diff(task.path, changed)
        except NotebookError as error:  # keep the notebook; report what it holds now
            outcome.crashes.append(str(error))
            outcome.applied, new_text = 0, text
            findings = engine.lint_source(text, task.path, task.codes, python=True, versions=task.versions).findings
    elif new_text != text:
        import difflib

        outcome.new_data = encode(source, new_text)
        outcome.diff = "".join(difflib.unified_diff(
            text.splitlines(keepends=True), new_text.splitlines(keepends=True),
            fromfile=f"a/{task.path}", tofile=f"b/{task.path}"))
    if outcome.new_data is not None:
        outcome.read_digest = hashlib.sha256(data).hexdigest()
    if notebook is not None:
        findings = place(findings, notebook)
    outcome.findings = [finding.to_dict() for finding in findings]
    return outcome


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise SourceError(error.strerror or str(error)) from None


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
        import concurrent.futures
        import multiprocessing

        load("libcst")  # once, before forking, rather than once per worker
        context = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
        order = sorted(range(len(tasks)), key=lambda index: _size(tasks[index]), reverse=True)
        chunk = max(1, min(4, len(tasks) // (jobs * 16)))
        outcomes: list[Outcome | None] = [None] * len(tasks)
        with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_exit_with_parent,
                                                    initargs=(os.getpid(),)) as pool:
            done = pool.map(process, [tasks[i] for i in order], chunksize=chunk)
            for count, (index, outcome) in enumerate(zip(order, done, strict=True)):
                outcomes[index] = _reported(outcome, count, len(tasks), progress)
        return outcomes  # type: ignore[return-value]
    finally:
        if progress is not None:
            progress.close()


def _reported(outcome: Outcome, index: int, total: int, progress: Progress | None) -> Outcome:
    if progress is not None:
        progress.update(index + 1, total)
    return outcome


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL runs no cleanup) stops instead of lingering."""
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
    discovered = discover([p for p in paths if p != "-"], resolver, (*file_patterns(), f"*{SUFFIX}"))
    result.errors.extend(discovered.errors)
    targets = list(discovered.targets)
    if stdin is not None:
        targets.append(Target(stdin[0], True))
    cache = result_cache.Cache(options.cache_dir or os.path.join(resolver.cwd, result_cache.CACHE_DIR)) \
        if options.use_cache else None

    tasks: list[Task] = []
    cached: list[tuple[str, list[dict]]] = []
    for target in targets:
        try:
            settings = resolver.for_path(target.path if target.path != "-" else resolver.cwd)
        except ConfigError as error:
            result.errors.append((target.path, str(error)))
            continue
        codes = settings.enabled(target.path)
        kind = kind_of(target.path)
        unsafe = settings.unsafe_fixes
        versions = dict(settings.versions) if uses_versions(codes) else {}
        if stdin is not None and target.path == stdin[0]:
            tasks.append(Task(target.path, stdin[1], codes, kind or PYTHON, options.mode, unsafe, versions))
            continue
        if kind is None and target.explicit:
            result.skipped.append((target.path, NOT_LINTED))
            continue
        kind = kind or PYTHON  # a pattern the user added to `include`
        if cache is not None:
            try:
                data = _read(target.path)
            except SourceError as error:
                result.errors.append((target.path, str(error)))
                continue
            hit = cache.get(result_cache.key(data, target.path, kind, describe(versions)), codes)
            if hit is not None and (options.mode == CHECK or not _needs_work(hit, options.mode, unsafe)):
                cached.append((target.path, hit))
                continue
        tasks.append(Task(target.path, None, codes, kind, options.mode, unsafe, versions))

    outcomes = _run_tasks(tasks, options.jobs or os.cpu_count() or 1, options.progress)
    result.files = len(cached) + sum(outcome.error is None and outcome.skipped is None for outcome in outcomes)
    for path, findings in cached:
        result.findings.extend(_findings(path, findings))
    for task, outcome in zip(tasks, outcomes, strict=False):
        _collect(task, outcome, options, result, stdin)
        if cache is not None and outcome.cache_key is not None and outcome.error is None \
                and not outcome.crashes and outcome.new_data is None:
            cache.put(outcome.cache_key, outcome.relevant, task.codes, outcome.findings, outcome.depends)
    if cache is not None:
        cache.save()
    result.findings.sort(key=Finding.sort_key)
    return result


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
    result.findings.extend(_findings(task.path, outcome.findings))
    if outcome.new_data is None:
        return
    if options.mode == DIFF:
        result.diffs.append(outcome.diff or "")
    elif task.path == stdin_path(stdin):
        result.stdout_data = outcome.new_data
    else:
        try:
            if hashlib.sha256(_read(task.path)).hexdigest() != outcome.read_digest:
                raise SourceError("changed on disk while odelint was fixing it; not written")
            atomic_write(task.path, outcome.new_data)
        except (SourceError, OSError) as error:
            result.errors.append((task.path, str(error) if isinstance(error, SourceError) else
                                  f"cannot write: {error.strerror or error}"))
            return
    result.changed.append(task.path)
    result.fixes_applied += outcome.applied  # counted once the fixed text is written (or shown)
    if outcome.applied_codes:
        result.fixed_by_file[task.path] = Counter(outcome.applied_codes)
