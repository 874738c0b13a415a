"""Which words a text holds: the trigger gate's question (`odelint.api.rule.triggered`) and
the engine's other cheap word checks (code that may expect an error), asked of the same text
many times, and of an editor's next text after each keystroke."""

from __future__ import annotations


def words_of(text: str) -> Words:
    """The words `text` holds, as one object per text: the last text searched keeps its
    answers (the gate, the cache's relevance and the engine's other word checks ask of the
    same text), and a new one carries them over from it (`Words`)."""
    global _last_searched
    words = _last_searched  # read once: another thread may search another text meanwhile
    if words.text is not text:
        words = _last_searched = Words(text, words)
    return words


class Words:
    """Which words a text holds, found on demand. Made from the text searched before it,
    the answers carry over wherever the two texts differ only in the middle (an editor's
    keystroke): a word the last text lacked is looked for only where the edit could have
    made one (the changed span and a word's length either side of it), and a word it held
    is found again outside the span with a search that stops at the first match."""

    def __init__(self, text: str, last: Words | None = None) -> None:
        self.text = text
        self.present: dict[str, bool] = {}  # the answers so far: a hot loop reads them before asking
        self._last: dict[str, bool] = {}
        self._start = self._end = 0  # the span of `text` that differs from the last text
        if last is not None and abs(len(last.text) - len(text)) < _NEARBY:
            before = last.text
            start = common_prefix(before, text)
            end = common_suffix(before, text, start)
            if start + end > len(text) // 2:  # mostly the same text: worth carrying over
                self._last = last.present
                self._start, self._end = start, len(text) - end

    def holds(self, word: str) -> bool:
        found = self.present.get(word)
        if found is None:
            found = self.present[word] = self._search(word)
        return found

    def _search(self, word: str) -> bool:
        text = self.text
        before = self._last.get(word)
        if before is None:
            return word in text
        reach = len(word) - 1
        if text.find(word, max(self._start - reach, 0), self._end + reach) >= 0:
            return True
        return before and (text.find(word, 0, self._start) >= 0 or text.find(word, self._end) >= 0)


_NEARBY = 4096  # texts whose lengths differ by more are searched afresh


def common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix, found by halving (each test one comparison
    of slices in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(a: str, b: str, prefix: int) -> int:
    """The length of the longest common suffix that does not reach into the first `prefix`
    characters of either text."""
    low, high = 0, min(len(a), len(b)) - prefix
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


_last_searched = Words("")  # the last text `triggered` searched, and its words
