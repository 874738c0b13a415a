"""The one loader of odelint's data tables (lint/analysis/data/*.toml): what the model knows
about the JAX stack, kept as data outside the rules.

- `jax_api.toml`: transforms, traced bodies, callbacks, what calls return, keys, singular
  functions, optax facts, and the qualified names rules ask about by role (`[names]`);
- `library_modules.toml`: the Equinox module classes of the ecosystem's libraries;
- `diffrax_api.toml`: diffrax's solvers, controllers, adjoints and `diffeqsolve` defaults;
- `deprecated_apis.toml`: old spellings and what replaces them (odelint.analysis.deprecated_apis);
- `known_bad_versions.toml`: version combinations that break (odelint.analysis.known_bad).

Each table is read once, on first use, so linting a file that asks nothing pays nothing.
The TOML is what people edit; beside each one, `python -m odelint.dev generate` writes its
parsed form as JSON with the fingerprint of the TOML it came from (`<table>.json`). `tomllib`
parses in pure Python (18 ms for all six, on every cold start: a run, the first lint of an
editor's buffer, flake8's main process), `json` in C (under 1 ms). A mirror is only believed
while its fingerprint is the TOML's, so an edited table is read from the TOML until regenerated.
"""

from __future__ import annotations

import functools
import json
import os

TYPE_CHECKING = False  # not typing's: the warm path imports this module for `folder` (no typing there)
if TYPE_CHECKING:
    from typing import Any

TABLES = ("jax_api.toml", "library_modules.toml", "diffrax_api.toml", "deprecated_apis.toml",
          "known_bad_versions.toml", "intent.toml")


def folder() -> str:
    """Where the tables are: odelint.analysis's `data` folder, read as plain files (as the
    rules' index is); `importlib.resources` would cost every cold start 10 ms of imports."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def _text(name: str) -> str:
    with open(os.path.join(folder(), name), encoding="utf-8") as handle:
        return handle.read()


def mirror_name(name: str) -> str:
    """The file holding the parsed form of the table `name`: `jax_api.toml` -> `jax_api.json`."""
    return name.removesuffix(".toml") + ".json"


def mirror_text(text: str) -> str:
    """What the mirror of a table whose TOML is `text` holds: its fingerprint and its parsed form."""
    import tomllib

    table = tomllib.loads(text)
    try:
        mirrored = json.dumps({"source": _fingerprint(text), "table": table}, indent=1)  # in the TOML's order
    except TypeError:
        mirrored = None
    if mirrored is None or json.loads(mirrored)["table"] != table:
        raise ValueError("the table holds a value JSON cannot keep (a date, a time, NaN)")
    return mirrored + "\n"


def _fingerprint(text: str) -> list[int]:
    """What tells a table's TOML from any edit of it (a mirror is no secret: CRC-32 and size)."""
    import zlib  # not at import: the warm path finds the tables' folder here and reads no table

    data = text.encode("utf-8")
    return [zlib.crc32(data), len(data)]


@functools.cache
def read(name: str) -> dict[str, Any]:
    """The table `name` (one of TABLES), parsed; raises on a malformed table: it is our data."""
    if name not in TABLES:
        raise KeyError(f"no data table {name!r}")
    text = _text(name)
    try:
        mirror = json.loads(_text(mirror_name(name)))
    except (OSError, ValueError):
        mirror = None
    if isinstance(mirror, dict) and mirror.get("source") == _fingerprint(text):
        return mirror["table"]
    import tomllib  # 3 ms to import: only for a table edited since its mirror was made

    return tomllib.loads(text)
