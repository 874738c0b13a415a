"""Reading and writing source files without losing anything: encoding, BOM, newlines, mode."""

from __future__ import annotations

import codecs
import dataclasses
import io
import os
import stat


class SourceError(Exception):
    """A file that cannot be linted; the message is one line naming the reason."""


@dataclasses.dataclass(frozen=True)
class SourceText:
    text: str
    encoding: str  # a codec name; "utf-8-sig" keeps a byte order mark


def decode(data: bytes, python: bool = True) -> SourceText:
    if b"\x00" in data[:8192]:
        raise SourceError("binary file (contains NUL bytes)")
    encoding = "utf-8-sig" if data.startswith(codecs.BOM_UTF8) else "utf-8"
    if python:
        import tokenize  # decoding happens where a file is linted, not on a warm run

        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as error:
            # No cookie and not UTF-8: the UTF-8 decode below names the offending byte.
            if "invalid or missing encoding declaration" not in str(error):
                raise SourceError(f"bad encoding declaration: {error}") from None
    try:
        return SourceText(data.decode(encoding), encoding)
    except UnicodeDecodeError as error:
        raise SourceError(f"not valid {encoding.upper()}: byte 0x{data[error.start]:02x} "
                          f"at offset {error.start}") from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r}") from None


def read_source(path: str, python: bool = True) -> tuple[bytes, SourceText]:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        raise SourceError("no such file") from None
    except IsADirectoryError:
        raise SourceError("is a directory") from None
    except PermissionError:
        raise SourceError("permission denied") from None
    except OSError as error:
        raise SourceError(error.strerror or str(error)) from None
    return data, decode(data, python)


def encode(source: SourceText, text: str) -> bytes:
    return text.encode(source.encoding)


def atomic_write(path: str, data: bytes) -> None:
    """Write through a temporary file in the same folder and rename: old or new, never half.

    The file's permission bits are kept; a symlink is written through to its target.
    """
    import tempfile

    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    mode = stat.S_IMODE(os.stat(target).st_mode)
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise SourceError("file is read-only; not fixed")
    handle, temporary = tempfile.mkstemp(prefix=".odelint-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
