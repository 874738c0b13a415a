"""Line starts for LSP positions (odelint.faces.server_text.Lines): LSP ends a line at `\\n`,
`\\r\\n` or a bare `\\r`, never at a form feed or another character `str.splitlines` breaks at."""

from __future__ import annotations

import bisect
import re

from hypothesis import given
from hypothesis import strategies as st
from odelint.faces.server_text import Lines


@given(st.text(alphabet="ab\n\r\x0c\x85\u2028é😀", max_size=40))
def test_line_starts_are_one_past_each_lsp_line_break(text: str) -> None:
    starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]
    lines = Lines(text)
    assert lines.starts == starts
    for offset in range(len(text) + 1):
        assert lines.offset_position(offset).line == bisect.bisect_right(starts, offset) - 1
