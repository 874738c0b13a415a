"""Classes defined in the project's other files: `from model import Net` in train.py.

Real training scripts keep the model in one file and the loop in another, so whether `Net`
is an Equinox module (and which of its leaves are not arrays) is decided in model.py. In an
editor, an open buffer of such a file answers with its unsaved text (`set_buffer`). An
imported name that no library table knows is looked up as a Python file: beside the linted
file, then under the project root (the nearest folder above it with a pyproject.toml,
setup.py, setup.cfg or .git) and its `src/`. Each such file is parsed once and kept while
its size and modification time stay the same and it is among the files used last; its facts
answer for its classes.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings
from collections.abc import Callable, Iterator

TYPE_CHECKING = False  # not typing's: a warm run imports no typing (odelint.api.records)
if TYPE_CHECKING:
    from typing import TypeVar

    from odelint.analysis.facts import Facts

    _T = TypeVar("_T")
    _Cache = TypeVar("_Cache", bound=dict)

_ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
_MAX_FILE_BYTES = 2_000_000
# Top-level packages never looked up among the project's files.
NEVER_PROJECT = frozenset({"jax", "jaxlib", "equinox", "optax", "diffrax", "lineax", "optimistix", "numpy",
                           "scipy", "typing", "collections", "functools", "dataclasses", "abc", "math", "os",
                           "sys", "jaxtyping", "flax", "torch", "haiku"})
# Other files' facts are kept, the most recently used, up to this many characters of their
# source in all (about 35 bytes of memory per character, more once queried): kept for good,
# the 24 files a run over the library corpus imported held 250,000 objects to its end, and a
# server's grew without bound. Files import the same few modules again and again: on both
# corpora, 128,000 characters would have parsed no file twice.
KEPT_CHARACTERS = 256_000
_parsed: dict[str, tuple[list[int], Facts | None, int]] = {}  # path -> (stamp, facts, characters), oldest use first
_buffers: dict[str, str] = {}  # absolute path -> the text of an editor's open buffer of that file
_recording: list[dict[str, list[int] | None]] = []


class _Places:
    """Where files are (which file an import names, a file's project root), looked up during
    one run: a run takes the project's tree as fixed, so each lookup is made once, not once per
    linted file (the files of one package import the same modules). Outside a run (`places`)
    nothing is kept. What each lookup noted is kept with it and noted again when it answers."""

    def __init__(self) -> None:
        self.run: object = None  # the run the kept lookups belong to
        self.open = False
        self.kept: dict[tuple, tuple[object, list[tuple[str, list[int] | None]]]] = {}


_places = _Places()
_noting: list[list[tuple[str, list[int] | None]]] = []  # what the lookups being made note


@contextlib.contextmanager
def recording() -> Iterator[dict[str, list[int] | None]]:
    """Collect the paths looked up while linting one file: a project file whose classes
    answered, with its (modification time, size), and a path where no file was (None), since
    a module created there later would answer. A cached result holds only while they stay so."""
    files: dict[str, list[int] | None] = {}
    _recording.append(files)
    try:
        yield files
    finally:
        _recording.pop()


@contextlib.contextmanager
def places(run: object) -> Iterator[None]:
    """Keep where files are for the run `run` (a token: the runner's run, one lint of the
    language server, one flake8 run); a different run starts afresh. Files are created or
    removed between runs, not during one (fixes rewrite files, never create or remove them).
    None: no run, nothing kept."""
    if run is None:
        yield
        return
    if _places.run != run:
        _places.kept.clear()
        _places.run = run
    _places.open = True
    try:
        yield
    finally:
        _places.open = False


def _placed(key: tuple, look: Callable[[], _T]) -> _T:
    """`look()`, made once per run for `key`; its notes are noted again whenever it answers."""
    if not _places.open:
        return look()
    kept = _places.kept.get(key)
    if kept is None:
        _noting.append([])
        try:
            found = look()
        finally:
            notes = _noting.pop()
        kept = _places.kept[key] = (found, notes)
    else:
        for path, stamp in kept[1]:
            _note(path, stamp, contents=False)
    return kept[0]  # type: ignore[return-value]


def set_buffer(path: str, text: str | None) -> None:
    """An editor's open buffer of a project file: its text answers for the file (its classes,
    its x64 switch) instead of what is saved, until the buffer is closed (`text` None)."""
    if text is None:
        _buffers.pop(os.path.abspath(path), None)
    else:
        _buffers[os.path.abspath(path)] = text


def buffered() -> frozenset[str]:
    """The paths whose open buffers answer for them."""
    return frozenset(_buffers)


def read_text(path: str) -> str:
    """A project file's text: its open buffer's when an editor has one, else what is saved."""
    text = _buffers.get(os.path.abspath(path))
    if text is not None:
        return text
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def stamp(path: str) -> list[int] | None:
    """What a result that read `path` depends on: (modification time, size) on disk, or a
    digest of an open buffer's text (-1 first, so it never equals a file's stamp)."""
    text = _buffers.get(os.path.abspath(path)) if _buffers else None
    if text is not None:
        import zlib  # only for an editor's buffer

        return [-1, zlib.crc32(text.encode("utf-8", "surrogatepass")), len(text)]
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_mtime_ns, status.st_size]


def noted(path: str, contents: bool = True) -> list[int] | None:
    """The path's stamp, recorded as something the file being linted depends on: its stamp
    when its contents matter, [] when only that it exists does (a `.git` folder), None when
    nothing is there."""
    found = stamp(path)
    _note(path, found, contents)
    return found


def _note(path: str, found: list[int] | None, contents: bool) -> None:
    if not contents:
        for notes in _noting:
            notes.append((path, found))
    if _recording:
        files, key = _recording[-1], os.path.abspath(path)
        if contents or not files.get(key):
            files[key] = found if contents or found is None else []


def is_test_module(path: str) -> bool:
    """A test by its name: test_*.py, *_test.py, a test helper (`inference_test_utils.py`,
    `testing.py`), conftest.py."""
    name = os.path.basename(path)
    words = os.path.splitext(name)[0].split("_")
    return "test" in words or "testing" in words or name == "conftest.py"


def is_test_file(path: str) -> bool:
    """A file pytest runs or loads: a test module, or any file under tests/ (or test/)."""
    folders = os.path.normpath(os.path.abspath(path)).split(os.sep)[:-1]
    return is_test_module(path) or "tests" in folders or "test" in folders


def is_benchmark_file(path: str) -> bool:
    """A file under benchmarks/ (or bench/): its inputs are fake data whose values do not matter."""
    folders = os.path.normpath(os.path.abspath(path)).split(os.sep)[:-1]
    return "benchmarks" in folders or "bench" in folders


def is_test_or_benchmark(path: str | None) -> bool:
    """A test module or a benchmark, whose random inputs are made up: one key reused there is deliberate."""
    return bool(path) and (is_test_module(path) or is_benchmark_file(path))  # type: ignore[arg-type]


def project_root(path: str) -> str | None:
    folder = os.path.dirname(os.path.abspath(path))
    return _placed(("root", folder), lambda: _root_above(folder))


def _root_above(folder: str) -> str | None:
    while True:
        if any(noted(os.path.join(folder, marker), contents=False) is not None for marker in _ROOT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def module_file(qualname_module: str, importer: str, program: str | None = None) -> str | None:
    """The file that `import <module>` means for the file `importer` (relative imports
    start with dots), or None when no file of the project defines it. `program`: the folder
    of the script being run, first on Python's path, so its packages are found from anywhere."""
    return ImportsOf(importer, program).file(qualname_module)


class ImportsOf:
    """`module_file` for the many imports of one file: its project root is looked up once
    (a walk up its folders, four stats a level), not once per import."""

    def __init__(self, importer: str, program: str | None = None) -> None:
        self.here = os.path.dirname(os.path.abspath(importer))
        self.importer = importer
        self.program = program

    @functools.cached_property
    def root(self) -> str | None:
        return project_root(self.importer)

    def file(self, qualname_module: str) -> str | None:
        return _placed(("file", self.here, self.program, qualname_module), lambda: self._file(qualname_module))

    def _file(self, qualname_module: str) -> str | None:
        dots = len(qualname_module) - len(qualname_module.lstrip("."))
        parts = [part for part in qualname_module.lstrip(".").split(".") if part]
        if dots:
            base = self.here
            for _ in range(dots - 1):
                base = os.path.dirname(base)
            bases = [base]
        else:
            root = self.root
            bases = [self.here] + ([self.program] if self.program else []) + (
                [root, os.path.join(root, "src")] if root else [])
        for base in bases:
            stem = os.path.join(base, *parts)
            for candidate in (stem + ".py", os.path.join(stem, "__init__.py")):
                if parts and noted(candidate, contents=False) is not None and (
                        os.path.isfile(candidate) or os.path.abspath(candidate) in _buffers):
                    return candidate
        return None


def imported_files(facts: Facts, program: str | None = None) -> list[str]:
    """The project's files that the file of `facts` imports, in any scope, each once:
    `import pkg.model`, `from pkg.model import Net`, `from . import model` (`program`: as
    in `module_file`)."""
    import libcst as cst
    from odelint.analysis.scopes import dotted_name

    if facts.path is None:
        return []
    found: dict[str, None] = {}
    imports = ImportsOf(facts.path, program)
    for binding in facts.index.all_bindings():
        if binding.kind != "import":
            continue
        if isinstance(binding.node, cst.Import):
            names = [dotted_name(alias.name) or "" for alias in binding.node.names]
        else:  # `from m import x`: x is a module of m, or a name that m defines
            names = [binding.qualname or "", (binding.qualname or "").rpartition(".")[0]]
        for name in names:
            if not name.strip(".") or name.lstrip(".").split(".")[0] in NEVER_PROJECT:
                continue
            where = imports.file(name)
            if where is not None:
                found.setdefault(os.path.abspath(where))
                break
    return list(found)


def facts_of(path: str, seen: frozenset[str]) -> Facts | None:
    """The facts of another file of the project (None when it cannot be read or parsed)."""
    current = noted(path)
    if current is None:
        return None
    cached = _parsed.pop(path, None)
    if cached is not None and cached[0] == current:
        _parsed[path] = cached  # now the most recently used
        return cached[1]
    facts, characters = _build(path, seen)
    _parsed[path] = (current, facts, characters)
    while len(_parsed) > 1 and sum(entry[2] for entry in _parsed.values()) > KEPT_CHARACTERS:
        del _parsed[next(iter(_parsed))]
    return facts


def facts_imported(imports: ImportsOf, module: str, seen: frozenset[str]) -> Facts | None:
    """The facts of the project file that `import <module>` means in the file `imports` is for
    (None for a library, that file itself, a file of `seen`, being read already, or no file)."""
    if module.lstrip(".").split(".")[0] in NEVER_PROJECT:
        return None
    where = imports.file(module)
    importer = os.path.abspath(imports.importer)
    if where is None or os.path.abspath(where) in seen or os.path.abspath(where) == importer:
        return None
    return facts_of(where, seen | {importer})


def forget() -> None:
    """Drop the other files' facts kept so far, and what other modules keep of other files
    (`kept_of_other_files`): they are built again when asked for."""
    _parsed.clear()
    for cache in _other_caches:
        cache.clear()


_other_caches: list[dict] = []


def kept_of_other_files(cache: _Cache) -> _Cache:
    """Register a module's cache of what it read in other files, for `forget` to empty (the
    collector freezes what is alive after a `forget`: a cache left full would never be freed)."""
    _other_caches.append(cache)
    return cache


def _build(path: str, seen: frozenset[str]) -> tuple[Facts | None, int]:
    """The file's facts and how many characters its source has (what keeping it costs)."""
    import libcst as cst
    from odelint.analysis.facts import Facts, model_node_types
    from odelint.analysis.scopes import build_scope_index
    from odelint.analysis.unchecked import nodes_unchecked

    try:
        source = read_text(path)
        if len(source) > _MAX_FILE_BYTES or not compiles(source):  # text CPython refuses may crash LibCST's parser
            return None, 0
        with nodes_unchecked():  # CPython has compiled it
            module = cst.parse_module(source)
        index = build_scope_index(module, model_node_types())
    except (OSError, UnicodeDecodeError, cst.ParserSyntaxError, RecursionError, ValueError):
        return None, 0
    return Facts(index, path, seen | {os.path.abspath(path)}), len(source)


def compiles(text: str) -> bool:
    """Does CPython compile this text? Only then may LibCST's native parser have it: nesting
    CPython refuses overflows its stack (a segfault no `except` can catch). Compiling costs
    about a tenth of a LibCST parse."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<project file>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True
