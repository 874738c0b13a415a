"""The opt-in rule set: off by default, on when selected by exact code or in preview."""

from __future__ import annotations

import pytest
from odelint.api.registry import opt_in_codes
from odelint.faces import cli
from odelint.files.selection import Layer, resolve

CODES = ("ODL701", "ODL702", "ODL703")
OPT_IN = frozenset({"ODL702"})


@pytest.mark.parametrize(("layers", "expected"), [
    ([], {"ODL701", "ODL703"}),
    ([Layer(select=("ALL",))], {"ODL701", "ODL703"}),
    ([Layer(select=("ODL7",))], {"ODL701", "ODL703"}),
    ([Layer(extend_select=("ODL702",))], {"ODL701", "ODL702", "ODL703"}),
    ([Layer(select=("ODL702",))], {"ODL702"}),
    ([Layer(extend_select=("ODL702",)), Layer(ignore=("ODL702",))], {"ODL701", "ODL703"}),
])
def test_an_opt_in_rule_needs_its_exact_code(layers: list[Layer], expected: set[str]) -> None:
    assert resolve(CODES, layers, OPT_IN) == expected


def test_without_an_opt_in_set_every_rule_starts_on() -> None:
    assert resolve(CODES, []) == set(CODES)


def test_rules_lists_the_set_of_each_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["rules"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for line in lines:
        code = line.split()[0]
        assert (" opt-in " in line) == (code in opt_in_codes()), line
        assert " opt-in " in line or " default " in line
