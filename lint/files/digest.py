"""The digest of everything a run compares by content: files, the rule index, cache keys.

BLAKE2b (32 bytes) from CPython's own `_blake2`, which loads in a fraction of a millisecond:
`hashlib` loads OpenSSL first, 3-4 ms of a warm run that answers every file from the cache in
about 65 ms.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b as Hash
except ImportError:  # pragma: no cover (a CPython built without its own BLAKE2; OpenSSL's has no size)
    import hashlib

    def Hash(data: bytes = b"", digest_size: int = 32):  # type: ignore[no-redef]  # noqa: N802
        return hashlib.sha256(data)

SIZE = 32


def hasher(data: bytes = b"") -> Hash:
    """A digest to feed with `update`."""
    return Hash(data, digest_size=SIZE)


def hexdigest(data: bytes) -> str:
    return Hash(data, digest_size=SIZE).hexdigest()
