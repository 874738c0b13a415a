"""Where a comparison with a constant is true and false (odelint.analysis.intervals)."""

from __future__ import annotations

import libcst as cst
import pytest
from odelint.analysis.intervals import INF, guard, number


def _regions(test: str):
    found = guard(cst.parse_expression(test))
    assert found is not None
    return found[0], found[2], found[3]


@pytest.mark.parametrize("test, point, true", [
    ("x > 0", 0.0, False), ("x > 0", 1e-9, True), ("x >= 0", 0.0, True), ("x < -1", -1.0, False),
    ("x <= 2.5", 2.5, True), ("x == 0", 0.0, True), ("x == 0", 1.0, False), ("x != 0", 0.0, False),
    ("0 < x", 0.0, False), ("1e-6 <= self.r", 1e-6, True), ("-1 > x", -1.0, False),
])
def test_true_and_false_regions_split_the_line(test: str, point: float, true: bool) -> None:
    _, when_true, when_false = _regions(test)
    assert any(r.meets(point, point) for r in when_true) is true
    assert any(r.meets(point, point) for r in when_false) is (not true)


def test_the_variable_is_named_by_its_dotted_name() -> None:
    assert _regions("0.5 < self.radius")[0] == "self.radius"


def test_regions_meet_closed_intervals() -> None:
    _, when_true, when_false = _regions("x > 0")
    assert any(r.meets(-INF, 0.0) for r in when_false) and not any(r.meets(-INF, 0.0) for r in when_true)
    assert any(r.meets(-INF, 0.0) for r in _regions("x >= 0")[2]), "x >= 0 deselects the negatives"
    assert not any(r.meets(0.0, 0.0) for r in _regions("x >= 0")[2]), "but not 0 itself"
    assert any(r.meets(-INF, -1.0) for r in _regions("x > -1")[2])
    assert not any(r.meets(-INF, -1.0) for r in _regions("x > -0.5")[1])


@pytest.mark.parametrize("test", ["x > y", "f(x) > 0", "x > 0 > y", "x in (1, 2)", "x is None", "1 < 2"])
def test_only_a_variable_against_a_number_is_read(test: str) -> None:
    assert guard(cst.parse_expression(test)) is None


def test_numbers() -> None:
    assert [number(cst.parse_expression(t)) for t in ("3", "-2.5", "+1e-3", "x", "-x")] == [3.0, -2.5, 1e-3, None, None]
