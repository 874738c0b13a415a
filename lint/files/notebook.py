"""Jupyter notebooks (nbformat 4 JSON, read with the stdlib `json`): code cells joined into
one Python program, and the program's changes written back into the cells.

Each code cell becomes a run of lines of one program, so names defined in one cell are
known in the next (the kernel runs them in one namespace). IPython syntax that is not
Python (`%magic`, `%%cell magic`, `!shell`, `obj?`, `x = !cmd`) is masked by a placeholder
line, so line numbers stay put, no rule sees it and no fix may touch it. A `%%time` or
`%%timeit` cell runs its body as Python, so only its first line is masked (as Ruff does).
Lines end where Python ends them (`\n`, `\r\n`, `\r`; odelint.files.lines). Writing back
replaces only the `source` of cells whose text changed and re-serialises in the file's own
JSON layout, after checking that this layout reproduces the file byte for byte.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
import tokenize
from collections.abc import Iterable
from typing import NamedTuple

from odelint.files import lines as text_lines

MASK = "# odelint: IPython magic"
_SHELL_OR_MAGIC = re.compile(r"^[ \t]*(?:%|!|\?)")
_ASSIGNED = re.compile(r"^(?P<target>[ \t]*[A-Za-z_][\w.]*(?:[ \t]*,[ \t]*[A-Za-z_][\w.]*)*)[ \t]*=[ \t]*(?:%|!)")
_HELP = re.compile(r"^[ \t]*[A-Za-z_][\w.]*(?:\(\))?\?\??[ \t]*$")  # `jnp.sum?`, `f??`
_INDENT = re.compile(r"^[ \t]*")
_CELL_MAGIC = re.compile(r"^[ \t]*%%(?P<name>\w*)")
PYTHON_CELL_MAGICS = frozenset({"time", "timeit"})  # the cell's body (after the magic line) is Python


class NotebookError(Exception):
    """A notebook that cannot be read or written; the message is one line."""


class NotPythonNotebook(NotebookError):
    """A notebook whose kernel is another language: skipped, not an error."""


def lines(text: str) -> list[str]:
    """Lines with their endings, as Python counts them in a cell."""
    return text_lines.split(text)


@dataclasses.dataclass(frozen=True)
class Cell:
    """One code cell: where it sits in the notebook and where its lines sit in the program."""

    index: int              # position among all cells, markdown included (0-based)
    first_line: int         # its first line in the joined program (1-based)
    text: str               # its source as the notebook holds it
    masked: frozenset[int]  # lines of the cell (0-based) replaced by a placeholder
    header: int = 0         # leading lines that must stay first (a `%%time` line)
    foreign: bool = False   # a cell magic (`%%bash`, `%%writefile`): no Python line at all
    shows_error: bool = False  # its saved state shows a failure (`_demonstrates`): no fix may rewrite it
    output: str = ""        # the text its saved outputs show (printed, displayed, the error's name and value)

    @property
    def number(self) -> int:
        """What reports show: `cell 3` is the notebook's third cell, markdown cells included."""
        return self.index + 1

    @property
    def line_count(self) -> int:
        return len(lines(self.text))


class SavedCell(NamedTuple):
    """A cell's lines in the program (1-based, inclusive) and what its saved state shows:
    whether it demonstrates a failure (no fix may rewrite it), and the text of its outputs
    (a finding whose symptom that text shows is one the author has already seen)."""

    first: int
    last: int
    failed: bool
    output: str


@dataclasses.dataclass
class Program:
    """Code cells joined into one Python program, and a changed program turned back into
    cells: the one implementation the command line (a notebook file) and the language server
    (a notebook open in an editor) share."""

    cells: list[Cell]
    source: str    # the joined Python program

    @classmethod
    def of(cls, code_cells: Iterable[tuple[int, str]]) -> Program:
        """The program of (position in the notebook, source) of each code cell."""
        return cls(*join(code_cells))

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, line within the cell) of a program line (1-based)."""
        chosen = self.cells[0] if self.cells else None
        for cell in self.cells:
            if cell.first_line <= line:
                chosen = cell
        if chosen is None:
            return 1, line
        return chosen.number, max(1, line - chosen.first_line + 1)

    def saved(self) -> list[SavedCell]:
        """The cells whose saved state shows something: a failure, or output text."""
        return [SavedCell(cell.first_line, cell.first_line + max(cell.line_count, 1) - 1, cell.shows_error,
                          cell.output) for cell in self.cells if cell.shows_error or cell.output]

    def cell_lines(self, number: int) -> list[str]:
        for cell in self.cells:
            if cell.number == number:
                return text_lines.bare(cell.text)
        return []

    def cell_texts(self, program: str) -> dict[int, str]:
        """Each code cell's text (by cell index) once the program has become `program`.

        Lines are matched to the old program. Lines inserted at a boundary between two cells
        (an import added after the first cell's imports) go to the top of the next cell that
        runs Python (after its `%%time` line), never into an earlier cell, which has already
        run, nor into a cell magic (`%%bash`); at the very end, to the last Python cell.
        Raises NotebookError when a change touches a masked line."""
        old_lines = lines(self.source)
        new_lines = lines(program)
        owner = [cell for cell in self.cells for _ in range(cell.line_count)]
        masked = {cell.first_line - 1 + number: line if text_lines.ending(line) else line + "\n"
                  for cell in self.cells for number, line in enumerate(lines(cell.text)) if number in cell.masked}
        placed: dict[int, list[str]] = {cell.index: [] for cell in self.cells}
        heads: dict[int, list[str]] = {cell.index: [] for cell in self.cells}  # lines for a cell's top
        import difflib  # only a fix writing back needs it

        matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
        for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
            if tag == "equal":
                for offset in range(old_end - old_start):
                    old = old_start + offset
                    placed[owner[old].index].append(masked.get(old, new_lines[new_start + offset]))
                continue
            if not masked.keys().isdisjoint(range(old_start, old_end)):
                raise NotebookError("a fix would change a line that holds IPython syntax; not applied")
            if not owner:
                raise NotebookError("the notebook has no code cell to hold the change")
            spanned = {owner[line].index for line in range(old_start, old_end)}
            if len(spanned) > 1 and old_end - old_start == new_end - new_start:
                for offset in range(old_end - old_start):  # changed lines in several cells, one for one
                    placed[owner[old_start + offset].index].append(new_lines[new_start + offset])
                continue
            if len(spanned) > 1:
                raise NotebookError("a fix would move lines from one cell to another; not applied")
            if old_start < old_end or (0 < old_start < len(owner) and owner[old_start - 1] is owner[old_start]):
                placed[owner[min(old_start, len(owner) - 1)].index].extend(new_lines[new_start:new_end])
            else:
                self._insert_at_boundary(old_start, new_lines[new_start:new_end], placed, heads)
        texts = {}
        for cell in self.cells:
            held = placed[cell.index]
            text = "".join([*held[:cell.header], *heads[cell.index], *held[cell.header:]])
            if not text_lines.ending(cell.text) and text.endswith("\n"):
                text = text[:-1]
            texts[cell.index] = text
        return texts

    def _insert_at_boundary(self, old_line: int, new: list[str], placed: dict[int, list[str]],
                            heads: dict[int, list[str]]) -> None:
        """Lines inserted before program line `old_line` (0-based), which starts a cell or ends the program."""
        python = [cell for cell in self.cells if not cell.foreign]
        later = [cell for cell in python if cell.first_line - 1 >= old_line and cell.line_count]
        if later:
            heads[later[0].index].extend(new)
        elif python:
            placed[python[-1].index].extend(new)
        else:
            raise NotebookError("the notebook has no Python cell to hold the change")

    def changed(self, program: str) -> dict[int, tuple[str, str]]:
        """{cell number: (old text, new text)} of the cells `program` changes (NotebookError
        when a change would touch IPython syntax or move lines between cells)."""
        texts = self.cell_texts(program)
        return {cell.number: (cell.text, texts[cell.index]) for cell in self.cells if texts[cell.index] != cell.text}


@dataclasses.dataclass
class Notebook(Program):
    """A notebook file: its program, and what writing a changed program back needs."""

    raw: str = ""  # the file's text (without a byte order mark)
    document: dict = dataclasses.field(default_factory=dict)
    bom: bool = False

    def rewrite(self, program: str) -> tuple[bytes, dict[int, tuple[str, str]]]:
        """The notebook's new bytes, and {cell number: (old text, new text)} of changed cells."""
        changed = self.changed(program)
        if not changed:
            return self._encode(self.raw), {}
        style = self._style()
        document = json.loads(self.raw)
        for number, (_, new) in changed.items():
            raw_cell = document["cells"][number - 1]
            raw_cell["source"] = lines(new) if isinstance(raw_cell["source"], list) else new
        return self._encode(_dump(document, style)), changed

    def _encode(self, text: str) -> bytes:
        return text.encode("utf-8-sig" if self.bom else "utf-8")

    def _style(self) -> tuple[dict, str]:
        """json.dumps arguments (and the ending) that turn the document back into the file's text."""
        for style in _styles(self.raw):
            if _dump(self.document, style) == self.raw:
                return style
        raise NotebookError("its JSON layout is not one Jupyter writes, so it cannot be rewritten without "
                            "reformatting it; not fixed (save it from Jupyter once)")


def _styles(raw: str) -> list[tuple[dict, str]]:
    second = raw.split("\n", 2)[1] if raw.count("\n") >= 2 else ""
    width = len(second) - len(second.lstrip(" "))
    indents = [width] if raw.startswith("{\n") and width else [None]
    ascii_first = [False, True] if any(ord(char) > 127 for char in raw) else [True, False]
    separators = [(",", ": ")] if indents != [None] else [(", ", ": "), (",", ":")]
    return [({"indent": indent, "ensure_ascii": ensure_ascii, "separators": separator}, ending)
            for indent in indents for ensure_ascii in ascii_first for separator in separators
            for ending in ("\n", "")]


def _dump(document: dict, style: tuple[dict, str]) -> str:
    arguments, ending = style
    return json.dumps(document, **arguments) + ending


def read(data: bytes) -> Notebook:
    """Parse a notebook's bytes; raises NotebookError with a one-line reason."""
    try:
        raw = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotebookError(f"not a valid notebook: not UTF-8 (byte 0x{data[error.start]:02x} at offset "
                            f"{error.start})") from None
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as error:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {error.lineno} column {error.colno}: "
                            f"{error.msg}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        version = document.get("nbformat") if isinstance(document, dict) else None
        detail = f"nbformat {version} is not supported (only 4)" if version not in (None, 4) else "no `cells` list"
        raise NotebookError(f"not a valid notebook: {detail}")
    language = _language(document)
    if language is not None and language.lower() != "python":
        raise NotPythonNotebook(f"its kernel language is {language}, not Python; skipped")
    code = [(index, _source(cell.get("source", ""), index)) for index, cell in enumerate(document["cells"])
            if isinstance(cell, dict) and cell.get("cell_type") == "code"]
    cells, program = join(code)
    raw_cells = document["cells"]
    outputs = {cell.index: _output_text(raw_cells[cell.index]) for cell in cells}
    cells = [dataclasses.replace(cell, shows_error=_demonstrates(raw_cells[cell.index], outputs[cell.index]),
                                 output=outputs[cell.index]) for cell in cells]
    return Notebook(cells, program, raw=raw, document=document, bom=data.startswith(codecs.BOM_UTF8))


# Printed text that shows a failure the author kept: a traceback.
_FAILURE_TEXT = "Traceback (most recent call last)"


def _demonstrates(cell: dict, output: str) -> bool:
    """Does the cell's saved state show that it demonstrates a failure: an error output, the
    `raises-exception` tag (Jupyter's mark for a cell meant to raise), or a printed traceback?
    A fix must not rewrite the lesson. `output` is the text of its outputs (`_output_text`)."""
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, dict) else None
    if isinstance(tags, list) and "raises-exception" in tags:
        return True
    return any(output.get("output_type") == "error" for output in _outputs(cell)) or \
        _FAILURE_TEXT in output


def _outputs(cell: dict) -> list[dict]:
    outputs = cell.get("outputs")
    return [output for output in outputs if isinstance(output, dict)] if isinstance(outputs, list) else []


def _output_text(cell: dict) -> str:
    """What the cell's saved outputs show as text: printed streams, displayed values (their
    plain-text form), an error's name and message."""
    parts: list[str] = []
    for output in _outputs(cell):
        data = output.get("data")
        pieces = [output.get("text"), data.get("text/plain") if isinstance(data, dict) else None,
                  output.get("ename"), output.get("evalue")]
        for piece in pieces:
            if isinstance(piece, list):
                piece = "".join(part for part in piece if isinstance(part, str))
            if isinstance(piece, str):
                parts.append(piece)
    return "\n".join(parts)


def join(code_cells: Iterable[tuple[int, str]]) -> tuple[list[Cell], str]:
    """The cells and the program of (position in the notebook, source) of each code cell."""
    cells: list[Cell] = []
    parts: list[str] = []
    for index, text in code_cells:
        cell_lines = lines(text)
        magic = _cell_magic(cell_lines)
        header = 0
        if magic in PYTHON_CELL_MAGICS:
            header = next(number for number, line in enumerate(cell_lines) if line.strip()) + 1
        masked, program_lines = _mask(cell_lines, header)
        cells.append(Cell(index, len(parts) + 1, text, frozenset(masked), header,
                          magic is not None and magic not in PYTHON_CELL_MAGICS))
        parts.extend(program_lines)
    return cells, "".join(parts)


def _language(document: dict) -> str | None:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return None
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(key)
        if isinstance(value, dict) and isinstance(value.get(field), str):
            return value[field]
    return None


def _source(value, index: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return "".join(value)
    raise NotebookError(f"not a valid notebook: cell {index + 1} has a `source` that is neither text nor lines")


def _cell_magic(cell_lines: list[str]) -> str | None:
    """The name of the cell magic the cell starts with (`bash` for `%%bash`), or None."""
    first = next((line for line in cell_lines if line.strip()), "")
    match = _CELL_MAGIC.match(first)
    return match.group("name") if match else None


def _mask(cell_lines: list[str], header: int = 0) -> tuple[list[int], list[str]]:
    """(masked line numbers, the cell as program lines, each ending in a line break); the
    first `header` lines (a `%%time` line and the blank lines before it) are masked outright.

    Only a line that starts a statement can be IPython syntax: Python's tokenizer, fed the
    already masked lines one at a time, says whether a line continues a string, a bracket or
    a backslash (a `% b` line inside brackets is Python). If the tokenizer gives up (a cell that is
    not Python anyway), the remaining lines are judged alone."""
    program = [line if text_lines.ending(line) else line + "\n" for line in cell_lines]
    if not header and _cell_magic(program) is not None:  # a cell magic: the whole cell is another language
        return list(range(len(program))), [f"{MASK}\n"] * len(program)
    masked: list[int] = list(range(header))
    program[:header] = [f"{MASK}\n"] * header
    state = {"next": header, "depth": 0, "fresh": True, "continued": False}

    def judge(number: int, starts_statement: bool) -> None:
        body = text_lines.strip_break(program[number])
        if state["continued"]:  # the rest of a magic that ends in a backslash
            program[number] = f"{MASK}\n"
        elif not starts_statement:
            return
        elif _SHELL_OR_MAGIC.match(body) or _HELP.match(body):
            program[number] = f"{_INDENT.match(body).group()}pass  {MASK}\n"  # type: ignore[union-attr]
        elif assigned := _ASSIGNED.match(body):
            program[number] = f"{assigned.group('target')} = ...  {MASK}\n"
        else:
            return
        masked.append(number)
        state["continued"] = body.endswith("\\")

    def readline() -> str:
        number = state["next"]
        if number >= len(program):
            return ""
        state["next"] += 1
        judge(number, bool(state["fresh"]) and state["depth"] == 0)
        return text_lines.with_newlines(program[number])

    try:
        for token in tokenize.generate_tokens(readline):
            if token.type == tokenize.OP and token.string in "([{":
                state["depth"] += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                state["depth"] = max(0, state["depth"] - 1)
            state["fresh"] = token.type in (tokenize.NEWLINE, tokenize.NL)
    except (tokenize.TokenError, SyntaxError):
        pass
    for number in range(state["next"], len(program)):
        judge(number, True)
    return masked, program


_cell_lines_cache: dict[str, Notebook | None] = {}


def cell_lines(source: str | bytes, number: int) -> list[str] | None:
    """The lines of cell `number` of a notebook file (a path) or of a notebook's bytes;
    None when it cannot be read. Each notebook is parsed once per process."""
    import hashlib  # only a cache key of bytes needs it

    name = source if isinstance(source, str) else hashlib.sha256(source).hexdigest()
    if name not in _cell_lines_cache:
        try:
            if isinstance(source, str):
                with open(source, "rb") as handle:
                    source = handle.read()
            _cell_lines_cache[name] = read(source)
        except (OSError, NotebookError):
            _cell_lines_cache[name] = None
    notebook = _cell_lines_cache[name]
    return notebook.cell_lines(number) if notebook is not None else None
