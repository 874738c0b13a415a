"""Lint one source text with one set of enabled rules: the single call every face uses.

gate (raw text) -> parse once -> one traversal for facts -> every rule -> positions of the
findings only -> noqa. Fixing re-runs this until the text stops changing.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import traceback
import warnings
from collections import Counter
from collections.abc import Collection, Mapping, Sequence

import libcst as cst
from odelint.analysis.facts import Facts, model_node_types
from odelint.analysis.scopes import ScopeIndex, Site, build_scope_index
from odelint.api.finding import Finding, Span
from odelint.api.registry import SyntaxErrorRule, all_rules, is_python_file
from odelint.api.rule import NO_VERSIONS, BaseRule, FileContext, Rule, TextRule, all_node_types
from odelint.engine import noqa
from odelint.engine.incremental import IncrementalParser
from odelint.engine.positions import locate
from packaging.version import Version

MAX_FIX_ROUNDS = 10
TOO_DEEP = "the file is nested too deeply to parse"
_NESTING = "too many nested parentheses"  # CPython's limit (200 levels)


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
                tree: ast.Module | None = None) -> LintResult:
    """Findings for one file's text (noqa applied); `codes` are the enabled rule codes.

    `python` says whether the text is Python; by default it is guessed from the name.
    `apply_noqa=False` leaves `# noqa` to a host that reads it itself (flake8).
    `gate=False` runs every rule whatever its triggers (to test that the gate misses nothing).
    `parser` keeps one document's previous tree (the editor) to re-parse only what changed.
    `versions` are the JAX stack's target versions rules may read (FileContext.versions).
    `tree` is CPython's `ast` of the text when a host already has it (flake8): the pre-checks
    read it instead of parsing again."""
    python = is_python_file(path) if python is None else python
    rules = rules_for(path, codes, python)
    if python:
        return _lint_python(source, path, rules, codes is None or SyntaxErrorRule.code in codes, apply_noqa, gate,
                            parser, versions, tree)
    return _lint_text(source, path, rules, apply_noqa, gate, versions)


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
                 versions: Mapping[str, Version | None] = NO_VERSIONS, tree: ast.Module | None = None) -> LintResult:
    triggered = [rule for rule in rules if not gate or rule.triggered_by(source)]
    parses = False  # CPython parsed the text: no syntax error, and LibCST may parse it too
    # The pre-check spares a LibCST parse. An editor's re-lint parses only what the edit
    # touched, so there the pre-check would cost more than the rules it drops (which could
    # not report anything anyway): it runs on a document's first lint only.
    if gate and (parser is None or not parser.has_tree):
        triggered, parses = _candidates(source, path, triggered, tree)
    if not triggered:
        error = _syntax_error(source, path) if check_syntax and not parses else None
        return LintResult([error] if error else [])
    parsed = _libcst_parse(source, path, None, parser) if parses else parse(source, path, parser)
    if isinstance(parsed, Finding):
        return LintResult([parsed] if check_syntax else [])
    return run_rules(parsed, source, path, triggered, apply_noqa, versions, parser)


def candidates(source: str, path: str, rules: Sequence[type[BaseRule]]) -> list[type[BaseRule]]:
    """The rules whose pre-check on CPython's `ast` says they may fire (odelint.analysis.sketch).

    Files CPython cannot parse keep every rule: LibCST, which judges newer syntax, decides."""
    return _candidates(source, path, rules)[0]


def _candidates(source: str, path: str, rules: Sequence[type[BaseRule]],
                tree: ast.Module | None = None) -> tuple[list[type[BaseRule]], bool]:
    """The candidates, and whether CPython parsed the text (then it holds no syntax error)."""
    if not any(issubclass(rule, Rule) and rule.has_precheck() for rule in rules):
        return list(rules), False
    if tree is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                tree = ast.parse(source, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return list(rules), False
    from odelint.analysis.sketch import Sketch

    sketch = Sketch(tree, path)
    return [rule for rule in rules if not issubclass(rule, Rule) or rule.may_fire(sketch)], True


def parse(source: str, path: str, parser: IncrementalParser | None = None) -> cst.Module | Finding:
    """LibCST's tree, or the ODL000 finding.

    CPython looks first (compiling costs about a tenth of a LibCST parse): nesting it
    refuses would take LibCST's native parser minutes or overflow its stack, a segfault
    no `except` can catch (`x = 1+1+...` with 10,000 terms, 5,000 nested brackets)."""
    if parser is not None:  # an editor's re-lint: CPython checks only the statements it parses
        spliced = parser.splice(source, _compiles)
        if spliced is not None:
            return spliced
    complaint, libcst_may_try = _cpython_verdict(source, path)
    if not libcst_may_try:
        return complaint  # type: ignore[return-value]
    return _libcst_parse(source, path, complaint, parser)


def _libcst_parse(source: str, path: str, complaint: Finding | None,
                  parser: IncrementalParser | None = None) -> cst.Module | Finding:
    """CPython's complaint, when it has one, names the error the way `python` would."""
    try:
        return parser.parse(source) if parser is not None else cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return complaint or syntax_finding(path, error.raw_line, error.raw_column + 1, error.message)
    except cst.CSTValidationError as error:  # e.g. a str literal next to a bytes literal
        return complaint or syntax_finding(path, 1, 1, str(error))
    except RecursionError:
        return syntax_finding(path, 1, 1, TOO_DEEP)


def _compiles(text: str) -> bool:
    """Does CPython compile these top-level statements? (Then LibCST may parse them too.)"""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<edit>", "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return False
    return True


def _cpython_verdict(source: str, path: str) -> tuple[Finding | None, bool]:
    """(CPython's syntax error or None, whether LibCST may still parse the text).

    Compiling is about 3x faster than building `ast` objects but also rejects code that
    parses (`return` outside a function), so only its failures are checked again with
    `ast.parse`. What `ast` rejects for another reason than depth may be newer syntax
    (`type X = int` on Python 3.11), which LibCST judges."""
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
            return syntax_finding(path, error.lineno or 1, error.offset or 1, message), _NESTING not in message
        except (RecursionError, MemoryError):
            return syntax_finding(path, 1, 1, TOO_DEEP), False
        except ValueError as error:  # a NUL byte
            return syntax_finding(path, 1, 1, str(error)), False
    return None, True


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
              parser: IncrementalParser | None = None) -> LintResult:
    """One traversal for facts, then every rule's visitors over the indexed nodes; `parser`,
    an editor document's, lends what it knows of the statements' lines and positions."""
    result = LintResult([], parsed=True)
    try:
        index = build_scope_index(module, all_node_types(rules) | model_node_types())
    except RecursionError:
        return LintResult([syntax_finding(path, 1, 1, "the file is nested too deeply to analyse")])
    facts = Facts(index, path)
    context = FileContext(path, source, module, facts, versions)
    calls = CallIndex(facts)
    visited_at: dict[int, int] = {}  # finding -> order of the node being visited when it was reported
    for rule_class in rules:
        rule = rule_class(context)
        try:
            node_types: dict[type[cst.CSTNode], str] = rule_class.node_types() if issubclass(rule_class, Rule) else {}
            for node_type, method in node_types.items():
                visit = getattr(rule, method)
                nodes = calls.declared(rule_class) if node_type is cst.Call else None
                for node, site in index.of_type(node_type) if nodes is None else nodes:
                    before = len(rule.findings)
                    visit(node, site)
                    for finding in rule.findings[before:]:
                        visited_at[id(finding)] = site.order
            rule.finish()
        except Exception as error:  # a broken rule must not stop the run
            result.crashes.append(_crash(rule_class.code, path, error))
            continue
        result.findings.extend(rule.findings)
    if result.findings:
        _locate(module, source, result.findings, _tops(index, result.findings, visited_at), parser)
    kept = noqa.unsuppressed(result.findings, source) if apply_noqa else result.findings
    result.findings = sorted(kept, key=Finding.sort_key)
    return result


class CallIndex:
    """The file's calls by the qualified name of their function and by method name, built on
    first use, so each call's name is resolved once for every rule that declares its callees."""

    def __init__(self, facts: Facts) -> None:
        self._facts = facts
        self._by_name: dict[str, list[tuple[cst.CSTNode, Site]]] | None = None
        self._by_method: dict[str, list[tuple[cst.CSTNode, Site]]] = {}

    def declared(self, rule: type[BaseRule]) -> list[tuple[cst.CSTNode, Site]] | None:
        """The calls `rule` declares, in source order; None when it looks at every call."""
        callees = rule.callees() if issubclass(rule, Rule) else None
        if callees is None:
            return None
        if self._by_name is None:
            self._by_name = {}
            for node, site in self._facts.index.of_type(cst.Call):
                func = node.func
                qualname = self._facts.qualname(func, site.scope)
                if qualname is not None:
                    self._by_name.setdefault(qualname, []).append((node, site))
                if isinstance(func, cst.Attribute):
                    self._by_method.setdefault(func.attr.value, []).append((node, site))
        found = [call for name in callees.names for call in self._by_name.get(name, ())]
        found += [call for name in callees.methods for call in self._by_method.get(name, ())]
        unique = {id(node): (node, site) for node, site in found}
        return sorted(unique.values(), key=lambda call: call[1].order)


def _tops(index: ScopeIndex, findings: list[Finding], visited_at: dict[int, int]) -> list[int | None]:
    """The top-level statement of each finding's node: that of the node being visited when it
    was reported, else (a finding made after the visit, in `finish`) that of the node itself
    when the traversal indexed it."""
    tops = [index.top_of(visited_at.get(id(finding))) for finding in findings]
    if None in tops:
        orders = {id(node): site.order for nodes in index.nodes.values() for node, site in nodes}
        tops = [top if top is not None or finding.node is None else index.top_of(orders.get(id(finding.node)))
                for top, finding in zip(tops, findings, strict=True)]
    return tops


def _locate(module: cst.Module, source: str, findings: list[Finding], tops: list[int | None],
            parser: IncrementalParser | None) -> None:
    """Positions are computed only for files that have findings, and only around them."""
    located = [(finding, node, top) for finding, top in zip(findings, tops, strict=True)
               if (node := finding.node) is not None]
    wanted = [(node, top) for _, node, top in located]
    if parser is None:
        positions = locate(module, source, wanted)
    else:
        positions = locate(module, source, wanted, text_lines=parser.text_lines(module), memo=parser.positions)
        parser.positions.keep_only(module)
    for finding, node, _ in located:
        where = positions.get(node)
        if where is not None:
            finding.span = Span(where.start.line, where.start.column + 1, where.end.line, where.end.column + 1)


def _crash(code: str, path: str, error: BaseException) -> RuleCrash:
    frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
    where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
    return RuleCrash(code, path, f"{type(error).__name__}: {error}{where}")


def fix_source(source: str, path: str, codes: Collection[str] | None = None, *,
               unsafe: bool = False, only: Finding | None = None, python: bool | None = None,
               versions: Mapping[str, Version | None] = NO_VERSIONS) -> FixResult:
    """Apply fixes until nothing fixable is left (at most MAX_FIX_ROUNDS rounds).

    `only` restricts the first round to the fix of one finding (an editor quick fix).
    A round whose result would not parse is dropped and reported as a crash.
    """
    from odelint.engine import fix as fixing  # only fixing needs it

    python = is_python_file(path) if python is None else python
    current = source
    applied: Counter[str] = Counter()
    crashes: list[RuleCrash] = []
    for round_number in range(MAX_FIX_ROUNDS):
        module, findings, round_crashes = _lint_for_fix(current, path, codes, python, versions)
        crashes.extend(round_crashes)
        if module is None:
            return FixResult(current, findings, applied.total(), crashes, applied)
        candidates = findings
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
        except Exception as error:  # keep the last good text
            crashes.append(_crash(",".join(sorted({f.code for f in chosen})), path, error))
            return FixResult(current, findings, applied.total(), crashes, applied)
        if new_source == current:
            return FixResult(current, findings, applied.total(), crashes, applied)
        applied.update(finding.code for finding in chosen)
        current = new_source
    _, findings, round_crashes = _lint_for_fix(current, path, codes, python, versions)
    return FixResult(current, findings, applied.total(), crashes + round_crashes, applied)


def _lint_for_fix(source: str, path: str, codes: Collection[str] | None, python: bool,
                  versions: Mapping[str, Version | None] = NO_VERSIONS):
    """Like lint_source, but also hands back the parsed module the findings point into."""
    rules: list[type[BaseRule]] = [rule for rule in rules_for(path, codes, python)
                                   if issubclass(rule, Rule) and rule.triggered_by(source)]
    rules = candidates(source, path, rules) if python else rules
    if not python or not rules:
        result = lint_source(source, path, codes, python, versions=versions)
        return None, result.findings, result.crashes
    parsed = parse(source, path)
    if isinstance(parsed, Finding):
        return None, [parsed], []
    result = run_rules(parsed, source, path, rules, versions=versions)
    return parsed, result.findings, result.crashes
