"""Which rule codes are on: Ruff's layered select / extend-select / ignore with prefixes."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from odelint.api.records import NamedTuple

SELECTOR = re.compile(r"^(ALL|ODL\d{0,3})$")


class SelectionError(ValueError):
    pass


class Layer(NamedTuple):
    """One source of choices (the config file, then the command line)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def selectors(self) -> Iterable[str]:
        yield from self.select or ()
        yield from self.extend_select
        yield from self.ignore


def check_selectors(selectors: Iterable[str], known: Sequence[str], where: str) -> None:
    for selector in selectors:
        if not SELECTOR.match(selector):
            raise SelectionError(f"{where}: {selector!r} is not a rule code or prefix "
                                 "(expected e.g. ODL201, ODL2, ALL)")
        if selector != "ALL" and not any(code.startswith(selector) for code in known):
            raise SelectionError(f"{where}: unknown rule code or prefix {selector!r}")


def _longest(code: str, selectors: Iterable[str]) -> int:
    """Length of the most specific selector matching `code` (ALL counts 0), -1 for none."""
    best = -1
    for selector in selectors:
        if selector == "ALL":
            best = max(best, 0)
        elif code.startswith(selector):
            best = max(best, len(selector))
    return best


# Rules that run only when a selector names them (`select`/`extend-select`: the code, a
# prefix of it, or ALL): ODL002 (unused noqa), as Ruff's RUF100.
OFF_BY_DEFAULT = frozenset({"ODL002"})


def resolve(codes: Sequence[str], layers: Iterable[Layer], opt_in: frozenset[str] = frozenset()) -> frozenset[str]:
    """Start with every rule on but OFF_BY_DEFAULT and the opt-in set; each layer may replace
    the selection, extend it, narrow it. Within a layer the more specific selector wins; an
    ignore wins a tie. An opt-in rule is only switched on by its exact code (`ALL` and
    prefixes skip it)."""
    enabled = set(codes) - OFF_BY_DEFAULT - opt_in
    for layer in layers:
        result = set()
        for code in codes:
            chosen = max(_longest(code, layer.select or ()), _longest(code, layer.extend_select))
            if code in opt_in and chosen < len(code):
                chosen = -1
            on = chosen >= 0 if layer.select is not None else (code in enabled or chosen >= 0)
            ignored = _longest(code, layer.ignore)
            if ignored >= 0 and ignored >= chosen:
                on = False
            if on:
                result.add(code)
        enabled = result
    return frozenset(enabled)


def matching(codes: Sequence[str], selectors: Iterable[str]) -> frozenset[str]:
    selectors = tuple(selectors)
    return frozenset(code for code in codes if _longest(code, selectors) >= 0)
