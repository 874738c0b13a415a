"""Re-parse only the top-level statements an edit touched: the editor's fast path.

LibCST needs ~100 ms for a 1,000-line file on a CI-class core, all of the editor's budget.
Between two keystrokes almost every top-level statement is unchanged, and LibCST nodes are
immutable, so the previous tree's statements are reused: the new text is matched against
the old statements' text from both ends, and only the span between is parsed. Blank lines
and comments are then moved to where a whole-file parse puts them (the next statement's
leading lines, or the footer). Whenever the pieces might not fit (an edit in the first
statement or the header, indented blank or comment lines at a seam, which an indented
block before them could claim, text that only parses in context), the whole file is parsed.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from odelint.analysis.rendered import RenderedTexts
from odelint.analysis.scopes import Traversals
from odelint.engine.line_splice import spliced_line
from odelint.engine.positions import StatementPositions
from odelint.files import lines


class IncrementalParser:
    """Parses successive versions of one document, reusing unchanged statements (and the
    positions found inside them, `positions`, what the model's traversal learnt from them,
    `traversals`, and the texts messages quoted from them, `texts`)."""

    def __init__(self) -> None:
        self.positions = StatementPositions()
        self.traversals = Traversals()  # the model's traversal of each statement, kept likewise
        self.texts = RenderedTexts()
        self._module: cst.Module | None = None
        self._source = ""  # the text `_module` was made from
        # The source is header + statements + footer, each as it appears in the text. The
        # statements' texts of a whole-file parse are rendered when the next version needs them
        # (rendering every statement costs about a fifth of the parse; a document's first lint
        # does not need it).
        self._header = ""
        self._statements: list[str] | None = []
        self._breaks: list[int] | None = None  # the line breaks in each statement's text, when counted
        self._footer = ""

    def splice(self, source: str, check: Callable[[str], bool]) -> cst.Module | None:
        """The next version's tree when only the statements an edit touched need parsing and
        `check` accepts their text (the engine's guard against text LibCST's native parser
        must not see); else None, and the next `parse` parses the whole text."""
        module = self._splice(source, check) if self._module is not None else None
        if module is None:
            self._module = None
            return None
        return self._keep(module, source)

    def parse(self, source: str) -> cst.Module:
        """The same tree as `cst.parse_module(source)`; raises as it does."""
        module = self._splice(source) if self._module is not None else None
        if module is None:
            self._module = None
            module = cst.parse_module(source)
            self._header = _lines(module, module.header)
            self._statements = self._breaks = None
            self._footer = _lines(module, module.footer)
        return self._keep(module, source)

    def _keep(self, module: cst.Module, source: str) -> cst.Module:
        self._module, self._source = module, source
        if self._statements is not None:
            self._check_pieces()
        return module

    def prepare(self) -> None:
        """Render the last tree's statement texts, and the positions in the statements that
        hold findings, now (the server calls this once a document's first diagnostics are out),
        so that the first edit does not pay for them."""
        self._texts()
        if self._module is not None:
            self.positions.warm(self._module)

    @property
    def prepared(self) -> bool:
        """Are the statement texts the next edit needs at hand (or is there nothing to prepare)?"""
        return self._module is None or self._statements is not None

    def _texts(self) -> list[str] | None:
        """The statements' texts of the last tree (rendered now if not yet), else None."""
        if self._module is not None and self._statements is None:
            self._statements = [self._module.code_for_node(statement) for statement in self._module.body]
            self._breaks = None
            self._check_pieces()
        return self._statements if self._module is not None else None

    def _check_pieces(self) -> None:
        # Some text lives in no statement's rendering (a `\` continuation before the first
        # statement): then the pieces do not add up, and the next version is parsed whole.
        if self._header + "".join(self._statements or ()) + self._footer != self._source:
            self._module = None

    @property
    def has_tree(self) -> bool:
        """Is there a previous version's tree to reuse statements from?"""
        return self._module is not None

    def text_lines(self, module: cst.Module) -> list[int] | None:
        """The line where each top-level statement's text starts, when `module` is the last
        tree this parser made and its pieces add up to the source (else None)."""
        if module is not self._module or self._statements is None:
            return None  # not rendered yet: the engine finds the statements' lines itself
        if self._breaks is None or len(self._breaks) != len(self._statements):
            self._breaks = [_line_breaks(text) for text in self._statements]
        lines, line = [], 1 + _line_breaks(self._header)
        for breaks in self._breaks:
            lines.append(line)
            line += breaks
        return lines

    def _kept(self, source: str) -> tuple[int, int, int, int] | None:
        """(statements kept in front, kept at the back, start and end of the changed span)."""
        statements = self._texts()
        if statements is None or not (source.startswith(self._header) and source.endswith(self._footer)):
            return None
        start, front = len(self._header), 0
        while front < len(statements) and source.startswith(statements[front], start):
            start += len(statements[front])
            front += 1
        end, back = len(source) - len(self._footer), 0
        while back < len(statements) - front and source.endswith(statements[-1 - back], start, end):
            end -= len(statements[-1 - back])
            back += 1
        return front, back, start, end

    def _splice(self, source: str, check: Callable[[str], bool] | None = None) -> cst.Module | None:
        old = self._module
        kept = self._kept(source)
        if old is None or kept is None or not old.has_trailing_newline:
            return None
        front, back, start, end = kept
        if front == 0 or start > end:
            return None  # where the header ends is the whole-file parser's call
        if check is not None and not check(source[start:end]):
            return None
        if front + back == len(old.body) - 1 and self._statements is not None:  # one statement changed
            statement = spliced_line(old.body[front], self._statements[front], source[start:end], old.default_newline)
            if statement is not None:
                self._statements = [*self._statements[:front], source[start:end], *self._statements[front + 1:]]
                return old.with_changes(body=[*old.body[:front], statement, *old.body[front + 1:]])
        try:
            middle = cst.parse_module(source[start:end])
        except cst.ParserSyntaxError:
            return None
        if start < end and (not middle.has_trailing_newline or middle.default_newline != old.default_newline):
            return None
        if middle.default_indent != old.default_indent and _indented(source[start:end]):
            return None  # its blocks' indent is the middle's default, which the whole tree would render as its own
        rest = list(old.body[len(old.body) - back:])
        if not _flush_left(_lines(middle, [*middle.header, *middle.footer])) or (
                rest and not _flush_left(_lines(old, rest[0].leading_lines))):
            return None  # an indented blank or comment line may belong to the block before it
        body = list(middle.body)
        loose = [*middle.header, *middle.footer]  # blank lines and comments with no statement after them
        if body:
            body[0] = body[0].with_changes(leading_lines=[*middle.header, *body[0].leading_lines])
            loose = list(middle.footer)
        texts = self._statements or []  # rendered by `_kept`
        rest_texts = texts[len(texts) - back:]
        footer = list(old.footer)
        if loose and rest:
            rest[0] = rest[0].with_changes(leading_lines=[*loose, *rest[0].leading_lines])
            rest_texts[0] = old.code_for_node(rest[0])
        elif loose:
            footer = [*loose, *footer]
        module = old.with_changes(body=[*old.body[:front], *body, *rest], footer=footer)
        if len(body) == 1 and not loose:  # the common edit: the middle text is the one statement's
            middle_texts = [source[start:end]]
        else:
            middle_texts = [module.code_for_node(statement) for statement in body]
        breaks = self._breaks if self._breaks is not None and len(self._breaks) == len(texts) else None
        self._statements = [*texts[:front], *middle_texts, *rest_texts]
        self._breaks = None if breaks is None else [  # the kept statements' counts are kept
            *breaks[:front], *(_line_breaks(text) for text in middle_texts), *breaks[len(breaks) - back:]]
        if loose and rest and self._breaks is not None:
            self._breaks[len(self._breaks) - back] = _line_breaks(rest_texts[0])
        self._footer = _lines(module, footer)
        return module


def _line_breaks(text: str) -> int:
    """Line breaks as Python counts them: `\n`, `\r\n` and a lone `\r`."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _indented(text: str) -> bool:
    """Might the text hold an indented block (a line that starts with a space or a tab)?"""
    return text[:1] in (" ", "\t") or "\n " in text or "\n\t" in text or "\r " in text or "\r\t" in text


def _flush_left(text: str) -> bool:
    """Only empty lines and comments at column 0: lines no indented block can claim."""
    return all(line in ("\n", "\r\n", "\r") or line.startswith("#") for line in lines.split(text))


def _lines(module: cst.Module, lines) -> str:
    return "".join(module.code_for_node(line) for line in lines)
