"""What the rules about traced code share: the words a file with traced code must contain."""

from __future__ import annotations

# Code is traced only under a traced root of the same file: a tracing transform (`jit`,
# `filter_jit`, `vmap`, `pmap`, `checkpoint`, `remat`) or a function handed to `lax`
# control flow or a diffrax term. Each spelling of one contains one of these words
# (tests/test_arrays_rules.py checks them against lint/analysis/data/jax_api.toml).
TRACED_ROOT_WORDS = ("jit", "vmap", "pmap", "checkpoint", "remat", "scan", "while_loop", "fori_loop", "cond",
                     "switch", "map", "ODETerm", "ControlTerm")


def traced_triggers(*words: str) -> tuple[tuple[str, ...], ...]:
    """Trigger groups: every word given, and one traced-root word."""
    return tuple((*words, root) for root in TRACED_ROOT_WORDS)
