"""The array and randomness rules (ODL70x) beyond their embedded examples."""

from __future__ import annotations

from odelint.analysis import jax_api
from odelint.engine.core import lint_source
from odelint.rules.arrays.common import TRACED_ROOT_WORDS


def test_traced_root_words_cover_every_traced_root_in_the_api_table() -> None:
    """The gate of the traced-code rules is sound: each traced root's name contains a word."""
    roots = [name for name, transform in jax_api.transforms().items() if transform.traces]
    roots += list(jax_api.traced_bodies())
    for qualname in roots:
        name = qualname.rsplit(".", 1)[1]
        assert any(word in name for word in TRACED_ROOT_WORDS), qualname


def test_traced_code_rules_skip_files_without_a_traced_root() -> None:
    source = "import jax\n\ndef f(x):\n    print(x)\n    if x > 0:\n        return x\n"
    assert lint_source(source, "a.py", {"ODL702", "ODL703"}).findings == []
    jitted = source + "\ng = jax.jit(f)\n"
    assert sorted(f.code for f in lint_source(jitted, "a.py", {"ODL702", "ODL703"}).findings) == ["ODL702", "ODL703"]
