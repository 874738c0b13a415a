"""`odelint.api.records.NamedTuple` builds what `typing.NamedTuple` builds, without `typing`."""

from __future__ import annotations

import pickle
import typing

import pytest
from odelint.api.records import NamedTuple
from odelint.engine.runner import Options, Task


class Span(NamedTuple):
    """Where a finding is."""

    line: int
    column: int
    name: str | None = None
    tags: tuple[str, ...] = ()

    def moved(self, lines: int) -> Span:
        return self._replace(line=self.line + lines)

    @classmethod
    def origin(cls) -> Span:
        return cls(1, 0)


class TypedSpan(typing.NamedTuple):
    """Where a finding is."""

    line: int
    column: int
    name: str | None = None
    tags: tuple[str, ...] = ()


def test_a_record_is_the_named_tuple_typing_would_build() -> None:
    span = Span(3, 4, name="x")
    assert isinstance(span, tuple) and tuple(span) == (3, 4, "x", ())
    assert Span._fields == TypedSpan._fields == ("line", "column", "name", "tags")
    assert Span._field_defaults == TypedSpan._field_defaults == {"name": None, "tags": ()}
    # the annotations as written (typing wraps each in a ForwardRef)
    assert Span.__annotations__ == {"line": "int", "column": "int", "name": "str | None", "tags": "tuple[str, ...]"}
    assert Span.__annotations__.keys() == TypedSpan.__annotations__.keys()
    assert Span.__doc__ == TypedSpan.__doc__ == "Where a finding is."
    assert (Span.__name__, Span.__qualname__, Span.__module__) == ("Span", "Span", __name__)
    assert span.moved(2) == Span(5, 4, "x") and Span.origin() == Span(1, 0)
    assert span._asdict() == {"line": 3, "column": 4, "name": "x", "tags": ()}
    with pytest.raises(TypeError):
        Span(1)  # type: ignore[call-arg]


def test_a_record_crosses_to_a_worker_process() -> None:
    span = Span(3, 4, tags=("a",))
    assert pickle.loads(pickle.dumps(span)) == span
    task = Task("train.py", None, frozenset({"ODL201"}), "python", "check", False, {}, frozenset(), 10, 1.0, (1, 2))
    assert pickle.loads(pickle.dumps(task)) == task
    assert pickle.loads(pickle.dumps(Options(jobs=2))).jobs == 2


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows one with"):
        class Broken(NamedTuple):
            first: int = 0
            second: int  # type: ignore[misc]


def test_a_record_cannot_replace_the_named_tuples_own_machinery() -> None:
    with pytest.raises(AttributeError, match="_replace"):
        class Broken(NamedTuple):
            first: int

            def _replace(self, **changes: object) -> Broken:  # type: ignore[misc]
                return self


def test_a_record_whose_annotations_are_evaluated_lazily_is_refused_not_built_without_fields() -> None:
    """Python 3.14 hands a class body without `from __future__ import annotations` an
    `__annotate__` function instead of `__annotations__`: such a record is refused."""
    with pytest.raises(TypeError, match="from __future__ import annotations"):
        type(NamedTuple)("Lazy", (NamedTuple,), {"__module__": __name__, "__qualname__": "Lazy",
                                                 "__annotate__": lambda format: {"line": int}})
