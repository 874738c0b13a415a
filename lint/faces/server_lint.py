"""One lint of one editor buffer: the settings for its path, the editor's other open buffers
lent to the project model, then the engine (its rules split with the helper process, where
the server has one).

Free of pygls, so that the process the server forks at start (odelint.faces.server_helper)
lints exactly as the server itself does.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from odelint.analysis import project
from odelint.api.finding import Finding
from odelint.api.registry import all_rules, is_python_file
from odelint.engine import noqa
from odelint.engine.core import lint_source
from odelint.faces.server_helper import shares
from odelint.files.config import ConfigError, ConfigResolver, Overrides

if TYPE_CHECKING:
    from odelint.engine.incremental import IncrementalParser
    from odelint.faces.server_helper import Helper
    from packaging.version import Version


@dataclasses.dataclass
class Linted:
    """One lint of one version of a buffer: what diagnostics and code actions are built from."""

    uri: str
    version: int | None
    text: str
    path: str
    codes: frozenset[str] = frozenset()
    unsafe: bool = False
    # what the engine was given besides the text: a fix is built with the same
    versions: Mapping[str, Version | None] = dataclasses.field(default_factory=dict)
    options: frozenset[str] = frozenset()
    findings: list[Finding] = dataclasses.field(default_factory=list)
    crashes: list[str] = dataclasses.field(default_factory=list)
    config_error: str | None = None
    depends: frozenset[str] = frozenset()  # the project files this lint read (other open buffers too)

    def shown(self) -> tuple:
        """What the editor is shown of this lint: equal for two lints it cannot tell apart."""
        return [finding.to_dict() for finding in self.findings], self.crashes, self.config_error

    def already_shown(self, early: Linted | None, previous: Linted | None) -> bool:
        """Whether the editor already shows what this lint would: the forked first lint's
        answer (`early`), or a lint of the same version that a code action asked for while this
        one ran (`previous`)."""
        showing = early or (previous if previous is not None and previous.version == self.version
                            and previous.text == self.text else None)
        return showing is not None and showing.shown() == self.shown()


def resolver(root: str) -> ConfigResolver:
    """Settings for the buffers of a workspace, every rule known."""
    return ConfigResolver(Overrides(), [rule.code for rule in all_rules()], root)


def share_buffers(open_files: Mapping[str, str]) -> None:
    """The project's files open in the editor answer with their unsaved text (a class or an
    x64 switch edited in model.py counts for train.py before it is saved)."""
    for path in project.buffered() - open_files.keys():
        project.set_buffer(path, None)
    for path, text in open_files.items():
        project.set_buffer(path, text)


def lint_buffer(linted: Linted, settings_of: ConfigResolver, parser: IncrementalParser | None,
                split: Split | None = None) -> Linted:
    """Fill in `linted` (its uri, version, text and path set) from the engine; `parser`, the
    document's, keeps its tree for the next edit (None: a lint of this text alone). With
    `split`, the helper process lints its share of the rules meanwhile (odelint.faces.server_helper)."""
    try:
        settings = settings_of.for_path(linted.path)
    except ConfigError as error:
        linted.config_error = str(error)
        return linted
    linted.codes = settings.enabled(linted.path)
    linted.unsafe = settings.unsafe_fixes
    linted.versions, linted.options = settings.versions_for(linted.codes), settings.options
    python = is_python_file(linted.path)
    own, theirs = shares(linted.codes) if split is not None and python else (linted.codes, frozenset())
    if split is None or not theirs:
        return lint_codes(linted, own, parser)
    # With ODL002 each share comes back whole, `noqa` unapplied, and the directives are judged
    # against both together, as one process judges them.
    judging = noqa.UNUSED_CODE in own
    asked = split.helper.share(linted, theirs, split.open_files, split.documents, apply_noqa=not judging)
    started = time.monotonic()
    lint_codes(linted, own - {noqa.UNUSED_CODE}, parser, apply_noqa=not judging)
    given = split.helper.answer(asked, time.monotonic() - started)
    if given is None:  # no answer: this process lints every rule
        return lint_buffer(Linted(linted.uri, linted.version, linted.text, linted.path), settings_of, parser)
    linted.findings = sorted([*linted.findings, *map(Finding.from_dict, given["findings"])], key=Finding.sort_key)
    if judging:
        linted.findings = noqa.judged(linted.findings, linted.text, linted.codes, linted.path, python)
    linted.crashes += given["crashes"]
    linted.depends |= given["depends"]
    return linted


def lint_codes(linted: Linted, codes: frozenset[str], parser: IncrementalParser | None,
               apply_noqa: bool = True) -> Linted:
    """One engine call on `linted`'s text with `codes` and its settings (versions, options)."""
    with project.places(object()), project.recording() as depends:  # each lint its own run
        result = lint_source(linted.text, linted.path, codes, apply_noqa=apply_noqa, parser=parser,
                             versions=linted.versions, options=linted.options)
    linted.depends = frozenset(depends)
    linted.findings = result.findings
    linted.crashes = [crash.message() for crash in result.crashes]
    return linted


@dataclasses.dataclass(frozen=True)
class Split:
    """The helper process, and what it must know besides the text: the editor's unsaved files
    and the documents whose trees it keeps (their URIs)."""

    helper: Helper
    open_files: Mapping[str, str]
    documents: Collection[str]
