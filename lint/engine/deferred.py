"""Import LibCST when it is first used, not when odelint is imported.

A warm run answers every file from the cache and parses nothing, yet every rule module
imports LibCST, whose import alone costs 0.17 s: most of a warm run. `defer` puts a stand-in
module in `sys.modules`; `import libcst as cst` binds the stand-in, and the first attribute
looked up on it imports the real package and copies its namespace into the stand-in, so
later `cst.X` lookups cost what they always did. (`importlib.util.LazyLoader` cannot do this
on Python 3.11: the next `import libcst` reads `__spec__`, which loads it.) Module-level
code in odelint must not touch `cst.<anything>`; `tests/test_deferred.py` checks that.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types


class _StandIn(types.ModuleType):
    def __getattr__(self, name: str):
        real = self.__dict__.get("_odelint_real") or load(self.__name__)
        return getattr(real, name)  # what the real module gained after loading (submodules)


def defer(name: str) -> None:
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = _StandIn(name)
    stand_in.__spec__ = spec
    sys.modules[name] = stand_in


def load(name: str) -> types.ModuleType:
    """The real module, imported now if it was deferred."""
    current = sys.modules.get(name)
    if not isinstance(current, _StandIn):
        return importlib.import_module(name)
    from odelint.engine import generated_code

    del sys.modules[name]
    try:
        # LibCST's node classes are dataclasses: their methods' code is kept across runs.
        with generated_code.kept(getattr(current.__spec__, "origin", None) or name, generated_code.DATACLASSES):
            real = importlib.import_module(name)
    except BaseException:
        sys.modules[name] = current
        raise
    current.__dict__.update(real.__dict__)
    current.__dict__["_odelint_real"] = real
    return real
