"""`NamedTuple` for the records a warm run builds, without importing `typing`.

A warm run answers every file from the cache, and nothing else it imports needs `typing`:
its import cost 2 ms, and each `typing.NamedTuple` class 90 µs against 40 µs for
`collections.namedtuple`, together a twentieth of the run (bench/RESULTS.md). A record is
declared as with `typing.NamedTuple` (annotated fields, defaults, methods, a docstring), and
type checkers see `typing.NamedTuple` itself. Modules on the warm path write
`TYPE_CHECKING = False` rather than import it; `tests/test_startup.py` checks that a warm
run imports no `typing`.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    # What a record's class body may not set (the named tuple's own machinery), and what it
    # sets that is not copied onto the record.
    _OWN = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make",
                      "_replace", "_asdict", "_source"})
    _SKIPPED = frozenset({"__module__", "__qualname__", "__annotations__"})

    class _Declared(type):
        """Makes a class body of annotated fields a named tuple, as `typing.NamedTuple` does."""

        def __new__(cls, name: str, bases: tuple, namespace: dict) -> type:
            if "__annotations__" not in namespace and any(key.startswith("__annotate") for key in namespace):
                # Python 3.14 evaluates annotations lazily unless the module asks for strings
                raise TypeError(f"{name}: a record's module needs `from __future__ import annotations`")
            fields = namespace.get("__annotations__", {})
            defaults = [namespace[field] for field in fields if field in namespace]
            defaulted = [field in namespace for field in fields]
            if defaulted != sorted(defaulted):
                raise TypeError(f"{name}: a field without a default follows one with a default")
            record = collections.namedtuple(name, list(fields), defaults=defaults, module=namespace["__module__"])
            record.__qualname__ = namespace.get("__qualname__", name)
            record.__annotations__ = dict(fields)
            for key, value in namespace.items():
                if key in _OWN:
                    raise AttributeError(f"{name}: cannot set {key} of a record")
                if key not in _SKIPPED and key not in fields:
                    setattr(record, key, value)
            return record

    NamedTuple = type.__new__(_Declared, "NamedTuple", (), {})
