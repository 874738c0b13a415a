"""The one loader of odelint's data tables (lint/analysis/data/*.toml): what the model knows
about the JAX stack, kept as data outside the rules.

- `jax_api.toml`: transforms, traced bodies, callbacks, what calls return, keys, singular
  functions, optax facts, and the qualified names rules ask about by role (`[names]`);
- `library_modules.toml`: the Equinox module classes of the ecosystem's libraries;
- `diffrax_api.toml`: diffrax's solvers, controllers, adjoints and `diffeqsolve` defaults;
- `deprecated_apis.toml`: old spellings and what replaces them (odelint.analysis.deprecated_apis);
- `known_bad_versions.toml`: version combinations that break (odelint.analysis.known_bad).

Each table is read once, on first use, so linting a file that asks nothing pays nothing.
"""

from __future__ import annotations

import functools
import tomllib
from importlib import resources
from typing import Any

TABLES = ("jax_api.toml", "library_modules.toml", "diffrax_api.toml", "deprecated_apis.toml",
          "known_bad_versions.toml", "intent.toml")


@functools.cache
def read(name: str) -> dict[str, Any]:
    """The table `name` (one of TABLES), parsed; raises on a malformed table: it is our data."""
    if name not in TABLES:
        raise KeyError(f"no data table {name!r}")
    text = resources.files("odelint.analysis").joinpath("data").joinpath(name).read_text(encoding="utf-8")
    return tomllib.loads(text)
