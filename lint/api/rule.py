"""The rule API: metadata, docs, embedded examples, and the hooks the engine calls.

A Python rule subclasses `Rule` and defines `visit_<NodeType>(self, node, site)` methods;
the engine calls them for every node of that type, in source order, after one shared
traversal has built the facts (scopes, imports, dataflow). A dependency-file rule
subclasses `TextRule` and defines `check_text`. Rules register themselves by being
defined in a module of the `odelint.rules` package.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

import libcst as cst
from odelint.analysis.words import words_of
from odelint.api.finding import Edits, Finding, Fix, Related, Safety, Span
from odelint.api.rule_index import PYTHON_FILES
from packaging.version import Version

if TYPE_CHECKING:  # the semantic model is for rules that run, not for reading their metadata
    from odelint.analysis.facts import Facts
    from odelint.analysis.needs import Need

CODE_PATTERN = re.compile(r"^ODL\d{3}$")
NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DOC_SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety")
# What a rule does inside code that exists to trigger an error (`with pytest.raises(...):`,
# `self.assertRaises(...)`, `@pytest.mark.xfail(raises=...)`; odelint.analysis.intent):
QUIET = "quiet"          # report nothing there: the error the rule predicts is the one the test expects
UNFIXED = "unfixed"      # report it, but offer no fix: rewriting the test would change what it tests
_EXPECTED_ERRORS_DOC = {
    QUIET: "Not reported inside code that expects an error (`with pytest.raises(...)`, `pytest.warns`, "
           "`self.assertRaises(...)`, a test marked `@pytest.mark.xfail(raises=...)`, one statement that a "
           "`try` guards with `except Exception:` and does not raise again, a notebook cell whose saved "
           "output shows the failure): there the error is what the test or the tutorial wants.",
    UNFIXED: "Reported without a fix inside code that expects an error (`with pytest.raises(...)`, "
             "`pytest.warns`, `self.assertRaises(...)`, a test marked `@pytest.mark.xfail(raises=...)`, one "
             "statement that a `try` guards with `except Exception:` and does not raise again, a notebook cell "
             "whose saved output shows the failure): the hazard is still there, but rewriting such code would "
             "change what it tests or shows.",
}


def example_code(text: str | None) -> str | None:
    """Examples read as code: a text that starts with a newline loses that newline and is
    dedented (as Fixit does), so a rule writes its examples as indented triple-quoted strings."""
    if text is None or not text.startswith("\n"):
        return text
    return textwrap.dedent(text[1:])


SPAN_PATTERN = re.compile(r"^(\d+):(\d+)-(\d+):(\d+)$")


def parse_span(text: str) -> Span:
    """`"3:5-3:20"` (line:column-end_line:end_column, 1-based, end exclusive) as a Span."""
    match = SPAN_PATTERN.match(text)
    if match is None:
        raise ValueError(f"a span reads line:column-end_line:end_column, not {text!r}")
    return Span(*(int(part) for part in match.groups()))


def format_span(span: Span) -> str:
    return f"{span.line}:{span.column}-{span.end_line}:{span.end_column}"


@dataclasses.dataclass(frozen=True)
class Flag:
    """Example code the rule must flag, stated completely (as Fixit's `Invalid(range=...)`).

    `span` is where each finding is reported, in source order (`"3:5-3:20"`, or a tuple of
    them when `count` > 1); `fixed` is the exact result of applying its fixes, required
    whenever the rule offers one; `unsafe` says the fixes need `--unsafe-fixes`, so a safe-only
    run must leave the code as it is."""

    code: str
    fixed: str | None = None
    unsafe: bool = False
    count: int = 1
    message: str | None = None  # a fragment the first finding's message must contain
    filename: str = "example.py"
    span: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", example_code(self.code))
        object.__setattr__(self, "fixed", example_code(self.fixed))

    @property
    def spans(self) -> tuple[Span, ...] | None:
        """The stated spans, parsed; None while an example states none."""
        if self.span is None:
            return None
        return tuple(parse_span(text) for text in ((self.span,) if isinstance(self.span, str) else self.span))


@dataclasses.dataclass(frozen=True)
class Pass:
    """Example code that looks similar but is correct: the rule must stay quiet."""

    code: str
    filename: str = "example.py"

    def __post_init__(self) -> None:
        object.__setattr__(self, "code", example_code(self.code))


@dataclasses.dataclass(frozen=True)
class Callees:
    """The calls a rule's `visit_Call` looks at: those whose function resolves to one of
    `names` (through imports and aliases) or to a name that starts with one of `prefixes`
    (`numpy.random.`), and method calls named in `methods` (`x.update(...)`, whatever `x` is)."""

    names: frozenset[str] = frozenset()
    methods: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()


NO_VERSIONS: Mapping[str, Version | None] = MappingProxyType({})
# Settings rules read (`[tool.odelint]` keys, e.g. `strict-key-reuse = true`); only keys set are present.
NO_OPTIONS: frozenset[str] = frozenset()


@dataclasses.dataclass
class FileContext:
    """What a rule may read about the file being linted.

    `versions` maps the JAX stack's packages (jax, jaxlib, equinox, diffrax, optax) to the
    version the code targets (`--target-version`, else the project's pins, else the installed
    one; None when unknown): a rule about an API that changed between versions sets
    `uses_versions = True` and reads it."""

    path: str
    source: str
    module: cst.Module | None = None
    facts: Facts | None = None
    versions: Mapping[str, Version | None] = dataclasses.field(default_factory=lambda: NO_VERSIONS)
    options: frozenset[str] = NO_OPTIONS


class BaseRule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # The rule can only fire on files containing, for at least one group, every substring
    # of that group: `(("optax", "equinox"),)`. The gate parses nothing else.
    triggers: ClassVar[tuple[tuple[str, ...], ...]] = ()
    fix_safety: ClassVar[Safety | None] = None      # the best fix the rule can offer
    file_patterns: ClassVar[tuple[str, ...]] = PYTHON_FILES
    fixtures: ClassVar[str | None] = None           # tests/fixtures/<CODE>, relative to the repo
    # The rule reads FileContext.versions (the JAX stack's target versions). Only then are
    # they looked up and made part of the cache key; other rules see an empty mapping.
    uses_versions: ClassVar[bool] = False
    examples: ClassVar[Sequence[Flag | Pass]] = ()
    expected_errors: ClassVar[str] = QUIET          # QUIET or UNFIXED (see above)
    # Texts that show the hazard happened (its error message, a tracer printed, a truncated
    # dtype): a finding in a notebook cell whose saved output shows one is not reported.
    symptoms: ClassVar[tuple[str, ...]] = ()
    # In the opt-in set: off unless selected by its exact code, or `preview = true` / `--preview`
    # (a rule whose findings in real code are not at least 9 in 10 worth acting on).
    opt_in: ClassVar[bool] = False

    def __init__(self, context: FileContext) -> None:
        self.context = context
        self.findings: list[Finding] = []

    @classmethod
    def docs(cls) -> str:
        text = _dedent_doc(cls.__doc__ or "")
        if issubclass(cls, Rule):
            text += f"\n## Expected errors\n{_EXPECTED_ERRORS_DOC[cls.expected_errors]}\n"
        if cls.symptoms:
            shown = " or ".join(f"`{text}`" for text in cls.symptoms)
            text += (f"\n## Notebooks\nNot reported in a cell whose saved output shows {shown}: the author "
                     "has already seen the hazard happen there.\n")
        return text

    @classmethod
    def applies_to(cls, filename: str) -> bool:
        return any(fnmatch.fnmatchcase(filename, pattern) for pattern in cls.file_patterns)

    @classmethod
    def triggered_by(cls, text: str) -> bool:
        return not cls.triggers or any(all(word in text for word in group) for group in cls.triggers)

    def finish(self) -> None:
        """Called once after every node was visited."""


class Rule(BaseRule):
    """A rule over the Python syntax tree."""

    # What a file must contain for the rule to fire, declared with odelint.analysis.needs
    # (`Needs.calls_to(...) & Needs.may_hold_modules()`); the engine evaluates it on the
    # file's Sketch before the LibCST parse. None: every file the gate lets through.
    needs: ClassVar[Need | None] = None

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        assert context.facts is not None  # a rule over the syntax tree always runs with the file's model
        self.facts: Facts = context.facts  # an attribute, not a property: visits ask for it 5,000 times per lint

    @classmethod
    def callees(cls) -> Callees | None:
        """The calls `visit_Call` looks at (None: every call). The engine resolves each call's
        name once per file and visits only the calls a rule declares: 18,000 visits of a
        1,200-line training script become a few dozen."""
        return None

    @classmethod
    def attributes(cls) -> frozenset[str] | None:
        """The attribute names `visit_Attribute` looks at (`x.<name>`, whatever `x` is; None:
        every attribute). The engine files the attributes by name once per file and visits
        only those: ten rules each visiting all 800 attributes of a training script cost as
        much as one of the model's analyses."""
        return None

    @classmethod
    def node_types(cls) -> dict[type[cst.CSTNode], str]:
        """The node types this rule visits, from its `visit_<NodeType>` methods (found once
        per class: the engine asks on every lint)."""
        known: dict[type[cst.CSTNode], str] | None = cls.__dict__.get("_visited_node_types")
        if known is not None:
            return known
        found = {}
        for attribute in dir(cls):
            if attribute.startswith("visit_"):
                node_type = getattr(cst, attribute[len("visit_"):], None)
                if isinstance(node_type, type) and issubclass(node_type, cst.CSTNode):
                    found[node_type] = attribute
        cls._visited_node_types = found  # type: ignore[attr-defined]
        return found

    def report(self, node: cst.CSTNode, message: str, *, fix: Fix | None = None,
               related: Sequence[tuple[cst.CSTNode, str]] = ()) -> None:
        """Report `node`; `related` are (node, message) of other places that explain it."""
        self.findings.append(Finding(self.code, self.name, message, Span(0, 0, 0, 0), self.context.path,
                                     fix=fix, node=node, related=tuple(
                                         Related(text, Span(0, 0, 0, 0), node=where) for where, text in related)))

    def fix(self, description: str, build: Callable[[], Edits], *, safe: bool = True) -> Fix:
        return Fix(Safety.SAFE if safe else Safety.UNSAFE, description, build)


class TextRule(BaseRule):
    """A rule over a non-Python text file (requirements, pyproject, environment.yml)."""

    def check_text(self) -> None:
        raise NotImplementedError

    def report_span(self, span: Span, message: str) -> None:
        self.findings.append(Finding(self.code, self.name, message, span, self.context.path))


def triggered(rules: Iterable[type[BaseRule]], text: str) -> list[type[BaseRule]]:
    """The rules whose trigger words the text holds: rules share words (`jax`, `random`), so
    each word is looked for once (a search of the whole text each), also across calls on the
    same text (a file's relevant rules for the cache, then the ones it runs), and an editor's
    next version of the text is searched only around what the edit changed (odelint.analysis.words)."""
    words = words_of(text)
    present = words.present  # answers found already, read without a call: this runs for every rule of every file
    base = BaseRule.triggered_by.__func__  # type: ignore[attr-defined]
    found: list[type[BaseRule]] = []
    for rule in rules:
        if rule.triggered_by.__func__ is not base:  # type: ignore[attr-defined]
            if rule.triggered_by(text):
                found.append(rule)
            continue
        if not rule.triggers:
            found.append(rule)
            continue
        for group in rule.triggers:  # loops, not generators: this runs for every rule of every file
            for word in group:
                holds = present.get(word)
                if not (words.holds(word) if holds is None else holds):
                    break
            else:
                found.append(rule)
                break
    return found


def _dedent_doc(text: str) -> str:
    lines = text.expandtabs().splitlines()
    indents = [len(line) - len(line.lstrip()) for line in lines[1:] if line.strip()]
    margin = min(indents, default=0)
    cleaned = [lines[0].strip()] if lines else []
    cleaned += [line[margin:] for line in lines[1:]]
    return "\n".join(cleaned).strip() + "\n"


def validate_rule(rule: type[BaseRule]) -> list[str]:
    """Problems with a rule's metadata; the registry refuses rules that have any."""
    problems = []
    if not CODE_PATTERN.match(getattr(rule, "code", "")):
        problems.append(f"{rule.__name__}: code must look like ODL123")
    if not NAME_PATTERN.match(getattr(rule, "name", "")):
        problems.append(f"{rule.__name__}: name must be kebab-case")
    if not getattr(rule, "summary", ""):
        problems.append(f"{rule.__name__}: summary is missing")
    docs = rule.docs()
    for section in DOC_SECTIONS:
        if section not in docs:
            problems.append(f"{rule.__name__}: docs lack '{section}'")
    return problems


def all_node_types(rules: Iterable[type[BaseRule]]) -> set[type]:
    types: set[type] = set()
    for rule in rules:
        if issubclass(rule, Rule):
            types.update(rule.node_types())
    return types
