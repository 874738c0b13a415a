"""Lint one source text with one set of enabled rules: the single call every face uses.

gate (raw text) -> parse once -> one traversal for facts -> every rule -> positions of the
findings only -> noqa. Fixing re-runs this until the text stops changing.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import os
import sys
import threading
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

import libcst as cst
from odelint.analysis import rendered
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.project import compiles
from odelint.analysis.scopes import ScopeIndex, Site, build_scope_index
from odelint.analysis.unchecked import nodes_unchecked
from odelint.analysis.words import words_of
from odelint.api.engine_rules import IoErrorRule, SyntaxErrorRule
from odelint.api.finding import Finding, Span
from odelint.api.registry import all_rules, is_python_file
from odelint.api.rule import (
    NO_OPTIONS,
    NO_VERSIONS,
    QUIET,
    BaseRule,
    FileContext,
    Rule,
    TextRule,
    all_node_types,
    triggered,
)
from odelint.engine import noqa, once
from odelint.engine.collector import LARGE_FILE_BYTES
from odelint.engine.incremental import IncrementalParser
from odelint.engine.positions import locate
from packaging.version import Version

if TYPE_CHECKING:
    from odelint.analysis.sketch import Sketch
    from odelint.files.notebook import SavedCell  # a notebook's cells, handed in by the runner

MAX_FIX_ROUNDS = 10
TOO_DEEP = "the file is nested too deeply to parse"
_NESTING = "too many nested parentheses"  # CPython's limit (200 levels)
_NUL = "null bytes"  # CPython refuses a NUL anywhere, even in a comment; LibCST accepts one there
# What CPython rejects in a larger text is not parsed again by LibCST to look for newer syntax:
# that parse would take minutes and gigabytes (a generated file of megabytes).
_RECHECK_LIMIT = 1_000_000
TOO_DEEP_TO_ANALYSE = "nested too deeply for odelint to analyse (Python accepts it); not linted"
# Room for the second try at code CPython accepts but a recursive tree walk cannot follow with
# Python's default limit (a 1,000-term `and` chain, 1,000 adjacent string literals).
_ROOMY_STACK_BYTES = 512 * 1024 * 1024
_ROOMY_RECURSION_LIMIT = 30_000
_T = TypeVar("_T")


class _TooDeep(RecursionError):
    """A parse or tree walk ran out of recursion on text CPython compiled: try again with room."""


_roomy = threading.local()
_roomy_lock = threading.Lock()


def _with_room(function: Callable[[], _T], fallback: Callable[[], _T]) -> _T:
    """`function` again in a thread with a large stack and a high recursion limit (`fallback()`
    when it still runs out, or when this already is that thread). The limit is the
    interpreter's, so it is raised only while the thread runs, one such thread at a time."""
    if getattr(_roomy, "active", False):
        return fallback()
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def roomy() -> None:
        _roomy.active = True
        try:
            outcome.append(function())
        except RecursionError:
            outcome.append(fallback())
        except BaseException as error:  # re-raised in the caller's thread
            failure.append(error)

    with _roomy_lock:
        previous_stack, previous_limit = threading.stack_size(), sys.getrecursionlimit()
        try:
            threading.stack_size(_ROOMY_STACK_BYTES)
            thread = threading.Thread(target=roomy, name="odelint-deep")
            sys.setrecursionlimit(max(previous_limit, _ROOMY_RECURSION_LIMIT))
            thread.start()
        except (RuntimeError, ValueError, MemoryError):  # no such thread here: report, do not crash
            sys.setrecursionlimit(previous_limit)
            return fallback()
        finally:
            threading.stack_size(previous_stack)
        try:
            thread.join()
        finally:
            sys.setrecursionlimit(previous_limit)
    if failure:
        raise failure[0]
    return outcome[0]


def too_deep(path: str) -> Finding:
    """Not a syntax error: CPython accepts the file, odelint cannot follow it."""
    return IoErrorRule.finding(path, TOO_DEEP_TO_ANALYSE)


@dataclasses.dataclass
class RuleCrash:
    """A rule raised on this file: reported, never fatal."""

    code: str
    path: str
    error: str

    def message(self) -> str:
        return f"internal error in rule {self.code}: {self.error} (this is a bug in odelint; please report it)"


@dataclasses.dataclass
class LintResult:
    findings: list[Finding]
    crashes: list[RuleCrash] = dataclasses.field(default_factory=list)
    parsed: bool = False


@dataclasses.dataclass
class FixResult:
    source: str
    findings: list[Finding]            # what remains after fixing
    applied: int = 0
    crashes: list[RuleCrash] = dataclasses.field(default_factory=list)
    applied_codes: Counter[str] = dataclasses.field(default_factory=Counter)  # fixes applied per rule

    def __post_init__(self) -> None:
        # Every fix round lints again: a rule that raises is reported once, not once a round.
        self.crashes = list({(crash.code, crash.error): crash for crash in self.crashes}.values())

    def changed(self, original: str) -> bool:
        return self.source != original


def rules_for(path: str, codes: Collection[str] | None, python: bool) -> list[type[BaseRule]]:
    """The enabled rules that look at this kind of file (codes None: every rule)."""
    filename = os.path.basename(path) or path
    chosen = []
    for rule in all_rules():
        if rule is SyntaxErrorRule or (codes is not None and rule.code not in codes):
            continue
        if issubclass(rule, Rule) if python else (issubclass(rule, TextRule) and rule.applies_to(filename)):
            chosen.append(rule)
    return chosen


def lint_source(source: str, path: str, codes: Collection[str] | None = None,
                python: bool | None = None, apply_noqa: bool = True, *, gate: bool = True,
                parser: IncrementalParser | None = None, versions: Mapping[str, Version | None] = NO_VERSIONS,
                tree: ast.Module | None = None, options: frozenset[str] = NO_OPTIONS,
                saved: Sequence[SavedCell] = ()) -> LintResult:
    """Findings for one file's text (noqa applied); `codes` are the enabled rule codes.

    `python` says whether the text is Python; by default it is guessed from the name.
    `apply_noqa=False` leaves `# noqa` to a host that reads it itself (flake8).
    `gate=False` runs every rule whatever its triggers (to test that the gate misses nothing).
    `parser` keeps one document's previous tree (the editor) to re-parse only what changed.
    `versions` are the JAX stack's target versions rules may read (FileContext.versions).
    `tree` is CPython's `ast` of the text when a host already has it (flake8): the pre-checks
    read it instead of parsing again. `saved` are a notebook's cells whose saved state shows
    something: a failure they demonstrate (code that expects its error), or output text."""
    try:
        return _lint_source(source, path, codes, python, apply_noqa, gate, parser, versions, tree, options, saved)
    except _TooDeep:
        return _with_room(lambda: _lint_source(source, path, codes, python, apply_noqa, gate, None, versions, tree,
                                               options, saved),
                          lambda: LintResult([too_deep(path)]))


def _lint_source(source: str, path: str, codes: Collection[str] | None, python: bool | None, apply_noqa: bool,
                 gate: bool, parser: IncrementalParser | None, versions: Mapping[str, Version | None],
                 tree: ast.Module | None, options: frozenset[str],
                 saved: Sequence[SavedCell] = ()) -> LintResult:
    python = is_python_file(path) if python is None else python
    rules = rules_for(path, codes, python)
    unused = apply_noqa and _checks_unused_noqa(codes)  # ODL002 must see what the directives suppress
    if python:
        result = _lint_python(source, path, rules, codes is None or SyntaxErrorRule.code in codes,
                              apply_noqa and not unused, gate, parser, versions, tree, options, saved)
    else:
        result = _lint_text(source, path, rules, apply_noqa and not unused, gate, versions)
    if unused and codes is not None:
        result.findings = noqa.judged(result.findings, source, codes, path, python)
    return result


def _checks_unused_noqa(codes: Collection[str] | None) -> bool:
    """ODL002 runs only when selected (it is off by default, as Ruff's RUF100)."""
    return codes is not None and noqa.UNUSED_CODE in codes


def _lint_text(source: str, path: str, rules: Sequence[type[BaseRule]], apply_noqa: bool = True,
               gate: bool = True, versions: Mapping[str, Version | None] = NO_VERSIONS) -> LintResult:
    result = LintResult([])
    context = FileContext(path, source, versions=versions)
    for rule_class in rules:
        if not (issubclass(rule_class, TextRule) and (not gate or rule_class.triggered_by(source))):
            continue
        rule = rule_class(context)
        try:
            rule.check_text()
        except Exception as error:  # a broken rule must not stop the run
            result.crashes.append(_crash(rule_class.code, path, error))
            continue
        result.findings.extend(rule.findings)
    kept = noqa.unsuppressed(result.findings, source, python=False) if apply_noqa else result.findings
    result.findings = sorted(kept, key=Finding.sort_key)
    return result


def _lint_python(source: str, path: str, rules: Sequence[type[BaseRule]], check_syntax: bool,
                 apply_noqa: bool = True, gate: bool = True, parser: IncrementalParser | None = None,
                 versions: Mapping[str, Version | None] = NO_VERSIONS, tree: ast.Module | None = None,
                 options: frozenset[str] = NO_OPTIONS, saved: Sequence[SavedCell] = ()) -> LintResult:
    chosen = triggered(rules, source) if gate else list(rules)
    parsed_tree = None  # CPython's tree of the text: no syntax error, and LibCST may parse it too
    # The pre-check spares a LibCST parse. An editor's re-lint parses only what the edit
    # touched, so there the pre-check would cost more than the rules it drops (which could
    # not report anything anyway): it runs on a document's first lint only.
    if gate and (parser is None or not parser.has_tree):
        candidates, parsed_tree = _candidates(source, path, chosen, tree, options)
        # A document's first lint runs the rules every later one runs, once it parses at all:
        # then the first edit finds the traversal and the analyses it keeps made for them.
        chosen = candidates if parser is None or not candidates else chosen
    parses = parsed_tree is not None
    if not chosen:
        error = _syntax_error(source, path) if check_syntax and not parses else None
        return LintResult([error] if error else [])
    if tree is None and len(source) < LARGE_FILE_BYTES:
        # The gate's tree also says where statements start, for the findings' positions
        # (`_locate`), which would parse the text again. A large file's is dropped before
        # LibCST parses it: it would stand on the file's peak memory.
        tree = parsed_tree
    del parsed_tree
    parsed = _libcst_parse(source, path, None, parser) if parses else parse(source, path, parser)
    if isinstance(parsed, Finding):
        return LintResult([parsed] if check_syntax else [])
    return run_rules(parsed, source, path, chosen, apply_noqa, versions, parser, saved, options=options, tree=tree)


def candidates(source: str, path: str, rules: Sequence[type[BaseRule]],
               options: frozenset[str] = NO_OPTIONS) -> list[type[BaseRule]]:
    """The rules whose declared needs the file holds (odelint.analysis.needs, evaluated on
    the file's Sketch of CPython's `ast`).

    Files CPython cannot parse keep every rule: LibCST, which judges newer syntax, decides."""
    return _candidates(source, path, rules, options=options)[0]


def _candidates(source: str, path: str, rules: Sequence[type[BaseRule]], tree: ast.Module | None = None,
                options: frozenset[str] = NO_OPTIONS) -> tuple[list[type[BaseRule]], ast.Module | None]:
    """The candidates, and CPython's tree of the text where it parsed it (then the text holds
    no syntax error); None where it did not, or where no rule declares its needs."""
    if not any(issubclass(rule, Rule) and rule.needs is not None for rule in rules):
        return list(rules), None
    if tree is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tree = ast.parse(as_python_reads(source), filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return list(rules), None
    from odelint.analysis.sketch import Sketch

    sketch = Sketch(tree, path, options)
    try:
        return _settled(sketch, rules), tree
    finally:
        sketch.release()


def _settled(sketch: Sketch, rules: Sequence[type[BaseRule]]) -> list[type[BaseRule]]:
    maybe = [rule for rule in rules if not _declares(rule) or rule.needs.holds(sketch, settle=False)]  # type: ignore[attr-defined]
    # Settle declarations, cheapest first, only until one holds: then the file is parsed with
    # LibCST anyway, and running a rule whose declaration may hold costs less than settling it.
    refuted: set[type[BaseRule]] = set()
    for rule in sorted(maybe, key=lambda rule: not _declares(rule) or not rule.needs.settles_cheaply):  # type: ignore[attr-defined]
        if not _declares(rule) or rule.needs.holds(sketch):  # type: ignore[attr-defined]
            return [rule for rule in maybe if rule not in refuted]
        refuted.add(rule)
    return []


def _declares(rule: type[BaseRule]) -> bool:
    """Does the rule declare what a file must contain for it to fire?"""
    return issubclass(rule, Rule) and rule.needs is not None


def parse(source: str, path: str, parser: IncrementalParser | None = None) -> cst.Module | Finding:
    """LibCST's tree, or the ODL000 finding.

    CPython looks first (compiling costs about a tenth of a LibCST parse): nesting it
    refuses would take LibCST's native parser minutes or overflow its stack, a segfault
    no `except` can catch (`x = 1+1+...` with 10,000 terms, 5,000 nested brackets)."""
    if parser is not None:  # an editor's re-lint: CPython checks only the statements it parses
        with nodes_unchecked():  # what it parses, CPython has compiled
            spliced = parser.splice(source, compiles)
        if spliced is not None:
            return spliced
    complaint, libcst_may_try = _cpython_verdict(source, path)
    if not libcst_may_try:
        return complaint  # type: ignore[return-value]
    return _libcst_parse(source, path, complaint, parser)


def _libcst_parse(source: str, path: str, complaint: Finding | None,
                  parser: IncrementalParser | None = None) -> cst.Module | Finding:
    """CPython's complaint, when it has one, names the error the way `python` would. Without one,
    CPython has accepted the text, and LibCST's nodes need not check themselves (`unchecked`)."""
    try:
        with nodes_unchecked() if complaint is None else contextlib.nullcontext():
            module = parser.parse(source) if parser is not None else cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return complaint or syntax_finding(path, error.raw_line, error.raw_column + 1, error.message)
    except cst.CSTValidationError as error:  # e.g. a str literal next to a bytes literal
        return complaint or syntax_finding(path, 1, 1, str(error))
    except RecursionError:
        if complaint is not None:
            return complaint
        raise _TooDeep from None
    if source.endswith("\r") and not module.has_trailing_newline:  # LibCST misses a final bare `\r`
        module = module.with_changes(has_trailing_newline=True)
    return module


def _cpython_verdict(source: str, path: str) -> tuple[Finding | None, bool]:
    """(CPython's syntax error or None, whether LibCST may still parse the text).

    Compiling is about 3x faster than building `ast` objects but also rejects code that
    parses (`return` outside a function), so only its failures are checked again with
    `ast.parse`. What `ast` rejects for another reason than depth may be newer syntax
    (`type X = int` on Python 3.11), which LibCST judges."""
    source = as_python_reads(source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(source, path, "exec", dont_inherit=True)
            return None, True
        except (RecursionError, MemoryError):
            return syntax_finding(path, 1, 1, TOO_DEEP), False
        except (SyntaxError, ValueError):
            pass
        try:
            ast.parse(source, filename=path)
        except SyntaxError as error:
            message = error.msg or "invalid syntax"
            return (syntax_finding(path, error.lineno or 1, error.offset or 1, message),
                    _NESTING not in message and _NUL not in message and len(source) <= _RECHECK_LIMIT)
        except (RecursionError, MemoryError):
            return syntax_finding(path, 1, 1, TOO_DEEP), False
        except ValueError as error:  # a NUL byte
            return syntax_finding(path, 1, 1, str(error)), False
    return None, True


def as_python_reads(source: str) -> str:
    """The text as `python file.py` reads it: every `\\r\\n` and lone `\\r` a `\\n`. `compile`
    on the text itself accepts a line continuation before a final `\\r\\n`, which a run of the
    file rejects ("unexpected EOF while parsing"); line and column numbers stay the same."""
    return source.replace("\r\n", "\n").replace("\r", "\n") if "\r" in source else source


def syntax_finding(path: str, line: int, column: int, message: str) -> Finding:
    first_line = message.strip().splitlines()[0] if message.strip() else "invalid syntax"
    return Finding(SyntaxErrorRule.code, SyntaxErrorRule.name, f"SyntaxError: {first_line}",
                   Span(line, column, line, column), path)


def _syntax_error(source: str, path: str) -> Finding | None:
    """The syntax check for files no rule needs to parse with LibCST: CPython decides, and
    LibCST only re-checks what CPython rejects, so newer syntax is judged as in `parse`."""
    complaint, libcst_may_try = _cpython_verdict(source, path)
    if complaint is None or not libcst_may_try:
        return complaint
    parsed = _libcst_parse(source, path, complaint)
    return parsed if isinstance(parsed, Finding) else None


def run_rules(module: cst.Module, source: str, path: str, rules: Sequence[type[BaseRule]],
              apply_noqa: bool = True, versions: Mapping[str, Version | None] = NO_VERSIONS,
              parser: IncrementalParser | None = None, saved: Sequence[SavedCell] = (),
              options: frozenset[str] = NO_OPTIONS, tree: ast.Module | None = None) -> LintResult:
    """One traversal for facts, then every rule's visitors over the indexed nodes.

    `parser`, an editor document's, lends what it knows of the statements' lines and
    positions; `tree`, CPython's of the same source where a face (flake8) or the gate made one,
    where the statements start. `saved` are a notebook's cells with a saved state: findings in one that shows
    the failure it demonstrates follow each rule's expected-errors policy (never with a fix),
    and findings whose symptom a cell's output shows are dropped (`_respect_intent`)."""
    result = LintResult([], parsed=True)
    try:
        index = build_scope_index(module, all_node_types(rules) | model_node_types(),
                                  parser.traversals if parser is not None else None)
    except RecursionError:
        raise _TooDeep from None
    facts = Facts(index, path)
    if parser is None:  # an editor's document keeps its model for the next edit
        once.made(facts)
    context = FileContext(path, source, module, facts, versions, options)
    # an editor's document quotes the nodes an edit did not touch as its last lint did
    with rendered.kept(parser.texts) if parser is not None else contextlib.nullcontext():
        visited_at = _visit(rules, context, index, DeclaredNodes(facts, source), result)
    if result.findings:
        try:
            _locate(module, source, result.findings, *_tops(index, result.findings, visited_at), parser, tree)
        except RecursionError:
            raise _TooDeep from None
        result.findings = _respect_intent(result.findings, facts, source, rules, saved, tree)
    kept = noqa.unsuppressed(result.findings, source) if apply_noqa else result.findings
    result.findings = sorted(kept, key=Finding.sort_key)
    return result


def _visit(rules: Sequence[type[BaseRule]], context: FileContext, index: ScopeIndex, declared: DeclaredNodes,
           result: LintResult) -> dict[int, int]:
    """Every rule's visitors over the nodes it declares (else every node of the types it
    visits); returns, for each finding, the order of the node being visited when it was reported."""
    visited_at: dict[int, int] = {}
    for rule_class in rules:
        rule = rule_class(context)
        try:
            node_types: dict[type[cst.CSTNode], str] = rule_class.node_types() if issubclass(rule_class, Rule) else {}
            for node_type, method in node_types.items():
                visit = getattr(rule, method)
                nodes = declared.of(rule_class, node_type)
                reported = len(rule.findings)
                for node, site in index.of_type(node_type) if nodes is None else nodes:
                    visit(node, site)
                    if len(rule.findings) != reported:  # rarely: most visits report nothing
                        for finding in rule.findings[reported:]:
                            visited_at[id(finding)] = site.order
                        reported = len(rule.findings)
            rule.finish()
        except RecursionError:
            raise _TooDeep from None
        except Exception as error:  # a broken rule must not stop the run
            result.crashes.append(_crash(rule_class.code, context.path, error))
            continue
        result.findings.extend(rule.findings)
        rule.findings = []  # a fix's builder holds the rule: no cycle from the rule back to its findings
    return visited_at


class DeclaredNodes:
    """The calls and attributes each rule declares it visits: the model files the file's calls
    by their callee's qualified name and by method name (`Facts.calls_to`, `Facts.method_calls`),
    and its attributes by name here, on first use, so a rule that declares what it reads visits
    only those nodes. Attribute names the file's text lacks (`source`, when given) name none
    of its attributes: then no attribute is filed at all."""

    def __init__(self, facts: Facts, source: str | None = None) -> None:
        self._facts = facts
        self._source = source
        self._by_attribute: dict[str, list[tuple[cst.CSTNode, Site]]] | None = None

    def of(self, rule: type[BaseRule], node_type: type[cst.CSTNode]) -> list[tuple[cst.CSTNode, Site]] | None:
        """The nodes of `node_type` that `rule` declares it visits, in source order; None when
        it visits every one."""
        if node_type is cst.Call:
            return self.calls(rule)
        if node_type is cst.Attribute:
            return self.attributes(rule)
        return None

    def calls(self, rule: type[BaseRule]) -> list[tuple[cst.CSTNode, Site]] | None:
        """The calls `rule` declares, in source order; None when it looks at every call."""
        callees = rule.callees() if issubclass(rule, Rule) else None
        if callees is None:
            return None
        names = callees.names
        if callees.prefixes:
            names = names | {name for name in self._facts.called_names() if name.startswith(callees.prefixes)}
        found: list[tuple[cst.CSTNode, Site]] = list(self._facts.calls_to(names))
        found += self._facts.method_calls(callees.methods)
        return _in_order(found)

    def attributes(self, rule: type[BaseRule]) -> list[tuple[cst.CSTNode, Site]] | None:
        """The attributes named as `rule` declares, in source order; None when it looks at every one."""
        names = rule.attributes() if issubclass(rule, Rule) else None
        if names is None:
            return None
        if self._source is not None:
            words = words_of(self._source)
            names = frozenset(name for name in names if words.holds(name))
            if not names:
                return []
        if self._by_attribute is None:
            self._by_attribute = {}
            for node, site in self._facts.index.of_type(cst.Attribute):
                self._by_attribute.setdefault(node.attr.value, []).append((node, site))
        return _in_order([attribute for name in names for attribute in self._by_attribute.get(name, ())])


def _in_order(found: list[tuple[cst.CSTNode, Site]]) -> list[tuple[cst.CSTNode, Site]]:
    """Each node once, in source order."""
    unique = {id(node): (node, site) for node, site in found}
    return sorted(unique.values(), key=lambda entry: entry[1].order)


class _Tops:
    """The top-level statement of nodes the traversal indexed, from their order (the map of
    nodes to orders is built for a node's type when some finding needs it: the index files
    each node under its exact type)."""

    def __init__(self, index: ScopeIndex) -> None:
        self._index = index
        self._orders: dict[type, dict[int, int]] = {}

    def of(self, node: cst.CSTNode | None) -> int | None:
        if node is None:
            return None
        orders = self._orders.get(type(node))
        if orders is None:
            orders = self._orders[type(node)] = {id(each): site.order for each, site in self._index.of_type(type(node))}
        return self._index.top_of(orders.get(id(node)))


def _tops(index: ScopeIndex, findings: list[Finding], visited_at: dict[int, int]) -> tuple[list[int | None], _Tops]:
    """The top-level statement of each finding's node: that of the node being visited when it
    was reported, else (a finding made after the visit, in `finish`) that of the node itself
    when the traversal indexed it; and the lookup, for related locations."""
    lookup = _Tops(index)
    tops = [index.top_of(visited_at.get(id(finding))) for finding in findings]
    tops = [top if top is not None else lookup.of(finding.node) for top, finding in zip(tops, findings, strict=True)]
    return tops, lookup


def _locate(module: cst.Module, source: str, findings: list[Finding], tops: list[int | None], lookup: _Tops,
            parser: IncrementalParser | None, tree: ast.Module | None) -> None:
    """Positions are computed only for files that have findings, and only around them (and
    around the related locations findings name)."""
    located = [(finding, node, top) for finding, top in zip(findings, tops, strict=True)
               if (node := finding.node) is not None]
    wanted: list[tuple[cst.CSTNode, int | None]] = [(node, top) for _, node, top in located]
    wanted += [(related.node, lookup.of(related.node)) for finding in findings for related in finding.related
               if related.node]
    if parser is None:
        positions = locate(module, source, wanted, tree=tree)
    else:
        positions = locate(module, source, wanted, text_lines=parser.text_lines(module), memo=parser.positions,
                           tree=tree)
        parser.positions.keep_only(module)

    def span(node: cst.CSTNode | None) -> Span | None:
        where = positions.get(node) if node is not None else None
        return None if where is None else Span(where.start.line, where.start.column + 1, where.end.line,
                                               where.end.column + 1)

    for finding, node, _ in located:
        finding.span = span(node) or finding.span
    for finding in findings:
        if finding.related:
            finding.related = tuple(related.moved(span(related.node) or related.span) for related in finding.related)


def _respect_intent(findings: list[Finding], facts: Facts, source: str, rules: Sequence[type[BaseRule]],
                    saved: Sequence[SavedCell], tree: ast.Module | None = None) -> list[Finding]:
    """Apply each rule's `expected_errors` policy inside code that expects an error: a test's
    `pytest.raises` block, or a notebook cell whose saved state shows the failure it
    demonstrates. A finding in a cell whose saved output shows the rule's own symptom is one
    the author has already seen: it is not reported."""
    from odelint.analysis import intent

    regions: list[tuple[int, int]] = []
    if intent.may_expect_errors(source):
        nodes = intent.ExpectedErrors(facts).regions()
        if nodes:
            where = locate(facts.index.module, source, nodes, tree=tree)
            regions = [(r.start.line, r.end.line) for r in (where.get(node) for node, _ in nodes) if r is not None]
    regions += [(cell.first, cell.last) for cell in saved if cell.failed]
    symptoms = {rule.code: rule.symptoms for rule in rules if rule.symptoms}
    shown = [cell for cell in saved if cell.output] if symptoms else []
    if not regions and not shown:
        return findings
    policies = {rule.code: rule.expected_errors for rule in rules}
    kept = []
    for finding in findings:
        line = finding.span.line
        if any(cell.first <= line <= cell.last and any(text in cell.output for text in symptoms.get(finding.code, ()))
               for cell in shown):
            continue
        if any(first <= line <= last for first, last in regions):
            if policies.get(finding.code) == QUIET:
                continue
            finding.fix = None
        kept.append(finding)
    return kept


def _crash(code: str, path: str, error: BaseException) -> RuleCrash:
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
    return RuleCrash(code, path, f"{type(error).__name__}: {error}{where}")


def fix_source(source: str, path: str, codes: Collection[str] | None = None, *,
               unsafe: bool = False, only: Finding | None = None, python: bool | None = None,
               versions: Mapping[str, Version | None] = NO_VERSIONS,
               saved: Sequence[SavedCell] = (), options: frozenset[str] = NO_OPTIONS) -> FixResult:
    """Apply fixes until nothing fixable is left (at most MAX_FIX_ROUNDS rounds).

    `only` restricts the first round to the fix of one finding (an editor quick fix).
    A round whose result would not parse is dropped and reported as a crash.
    `saved` cells that show a failure are never rewritten; the cells follow the text from
    round to round.
    Unused noqa codes (ODL002, when selected) are removed from the text once the tree's fixes
    are made.
    """
    try:
        return _fix_source(source, path, codes, unsafe, only, python, versions, saved, options)
    except _TooDeep:
        return _with_room(lambda: _fix_source(source, path, codes, unsafe, only, python, versions, saved, options),
                          lambda: FixResult(source, [too_deep(path)]))


def _fix_source(source: str, path: str, codes: Collection[str] | None, unsafe: bool, only: Finding | None,
                python: bool | None, versions: Mapping[str, Version | None], saved: Sequence[SavedCell],
                options: frozenset[str]) -> FixResult:
    python = is_python_file(path) if python is None else python
    if only is not None and only.code == noqa.UNUSED_CODE:
        fixed = FixResult(source, [])
    else:
        fixed = _fix_tree(source, path, codes, unsafe, only, python, versions, saved, options)
    if not _checks_unused_noqa(codes) or (only is not None and only.code != noqa.UNUSED_CODE):
        return fixed
    assert codes is not None
    raw = lint_source(fixed.source, path, codes, python, apply_noqa=False, versions=versions, options=options).findings
    idle = [entry for entry in noqa.unused(raw, fixed.source, codes, python)
            if only is None or entry.line == only.span.line]
    new_source, removed = noqa.remove_unused(fixed.source, idle)
    if removed:
        fixed.applied_codes[noqa.UNUSED_CODE] += removed
        fixed.applied += removed
    fixed.source = new_source
    fixed.findings = lint_source(new_source, path, codes, python, versions=versions, options=options).findings
    return fixed


def _fix_tree(source: str, path: str, codes: Collection[str] | None, unsafe: bool, only: Finding | None,
              python: bool, versions: Mapping[str, Version | None], saved: Sequence[SavedCell],
              options: frozenset[str]) -> FixResult:
    from odelint.engine import fix as fixing  # only fixing needs it

    current = source
    applied: Counter[str] = Counter()
    crashes: list[RuleCrash] = []
    for round_number in range(MAX_FIX_ROUNDS):
        module, findings, round_crashes = _lint_for_fix(current, path, codes, python, versions, saved, options)
        crashes.extend(round_crashes)
        if module is None:
            return FixResult(current, findings, applied.total(), crashes, applied)
        candidates = [f for f in findings if f.code != noqa.UNUSED_CODE]  # fixed as text, afterwards
        if only is not None:
            if round_number > 0:
                return FixResult(current, findings, applied.total(), crashes, applied)
            candidates = [f for f in findings if (f.code, f.span) == (only.code, only.span)]
        chosen = fixing.choose(candidates, unsafe)
        if not chosen:
            return FixResult(current, findings, applied.total(), crashes, applied)
        try:
            new_module = fixing.apply(module, [finding.fix.build() for finding in chosen])  # type: ignore[union-attr]
            new_source = new_module.code
            cst.parse_module(new_source)
        except RecursionError:
            raise _TooDeep from None
        except Exception as error:  # keep the last good text
            crashes.append(_crash(",".join(sorted({f.code for f in chosen})), path, error))
            return FixResult(current, findings, applied.total(), crashes, applied)
        if new_source == current:
            return FixResult(current, findings, applied.total(), crashes, applied)
        applied.update(finding.code for finding in chosen)
        saved = _follow(saved, current, new_source)
        current = new_source
    _, findings, round_crashes = _lint_for_fix(current, path, codes, python, versions, saved, options)
    return FixResult(current, findings, applied.total(), crashes + round_crashes, applied)


def _follow(saved: Sequence[SavedCell], old: str, new: str) -> list[SavedCell]:
    """Saved cells' line ranges in `old`, moved to where the same lines are in `new` (a cell
    that shows a failure is never rewritten, so its range moves as one unchanged block; a line a
    fix replaced maps to the lines that replaced it)."""
    if not saved:
        return []
    import difflib

    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for line in range(i1, i2):
            if tag == "equal":
                starts[line + 1] = ends[line + 1] = j1 + line - i1 + 1
            else:
                starts[line + 1], ends[line + 1] = j1 + 1, max(j2, j1 + 1)
    return [cell._replace(first=starts[cell.first], last=ends[cell.last]) for cell in saved
            if cell.first in starts and cell.last in ends]


def _lint_for_fix(source: str, path: str, codes: Collection[str] | None, python: bool,
                  versions: Mapping[str, Version | None] = NO_VERSIONS, saved: Sequence[SavedCell] = (),
                  options: frozenset[str] = NO_OPTIONS):
    """Like lint_source, but also hands back the parsed module the findings point into."""
    rules: list[type[BaseRule]] = [rule for rule in triggered(rules_for(path, codes, python), source)
                                   if issubclass(rule, Rule)]
    rules = candidates(source, path, rules, options) if python else rules
    if not python or not rules:
        result = lint_source(source, path, codes, python, versions=versions, options=options)
        return None, result.findings, result.crashes
    parsed = parse(source, path)
    if isinstance(parsed, Finding):
        return None, [parsed], []
    result = run_rules(parsed, source, path, rules, versions=versions, saved=saved, options=options)
    return parsed, result.findings, result.crashes
