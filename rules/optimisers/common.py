"""What the optimiser rules (ODL201-ODL204) share: spotting optax calls and building the filter fix."""

from __future__ import annotations

import libcst as cst
from odelint.analysis.facts import Facts
from odelint.analysis.scopes import Site
from odelint.api.finding import Edits, Replace

# optax transformations whose `update` raises without `params`
# ("You are using a transformation that requires the current value of parameters"),
# checked against optax 0.2.8. Matched on the last dotted component under `optax.`.
NEED_PARAMS = frozenset({
    "adamw", "adamaxw", "nadamw", "adan", "lion", "lamb", "lars", "adadelta", "fromage", "adafactor",
    "add_decayed_weights", "lookahead", "adaptive_grad_clip", "keep_params_nonnegative",
    "scale_by_trust_ratio", "scale_by_param_block_norm", "scale_by_param_block_rms",
    "scale_by_factored_rms", "prodigy", "dadapt_adamw", "mechanize", "madgrad", "scale_by_madgrad",
    "momo", "momo_adam",
})


def needs_params(constructors: frozenset[str] | None) -> list[str]:
    """The constructors (sorted) among those given that make `update` need params."""
    return sorted(name for name in constructors or () if name.rsplit(".", 1)[-1] in NEED_PARAMS)


def filtered(facts: Facts, value: cst.BaseExpression, site: Site) -> tuple[cst.Call, tuple]:
    """`eqx.filter(value, eqx.is_array)` spelt with the file's own equinox alias."""
    filter_ref, imports = facts.reference("equinox.filter", site)
    is_array_ref, more = facts.reference("equinox.is_array", site)
    call = cst.Call(filter_ref, [cst.Arg(value, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                                 cst.Arg(is_array_ref)])
    return call, (*imports, *more)


def wrap_in_filter(facts: Facts, value: cst.BaseExpression, site: Site) -> Edits:
    call, imports = filtered(facts, value, site)
    return Edits([Replace(value, call)], imports)
