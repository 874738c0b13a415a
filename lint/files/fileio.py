"""Reading and writing source files without losing anything: encoding, BOM, newlines, mode."""

from __future__ import annotations

import codecs
import contextlib
import io
import os
import stat
import sys
import time
from collections.abc import Iterator

from odelint.api.records import NamedTuple


class SourceError(Exception):
    """A file that cannot be linted; the message is one line naming the reason."""


class SourceText(NamedTuple):
    """A file's decoded text and the encoding to write it back in."""

    text: str
    encoding: str  # a codec name; "utf-8-sig" keeps a byte order mark


class NotRegular(OSError):
    """A FIFO, socket or device where a file was expected: reading it could block forever."""


def describe_mode(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def not_regular(mode: int) -> str:
    return f"{describe_mode(mode)}, not a regular file"


def nonblocking(path: str, flags: int) -> int:
    """An `opener` for open(): a FIFO opens at once instead of waiting for a writer."""
    return os.open(path, flags | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))


def ensure_regular(descriptor: int) -> None:
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegular(not_regular(mode))


# A file changed less than this long ago might change again within the file system's timestamp
# granularity without its status changing (git's "racily clean" entries).
RACY_NS = 2 * 10**9


def identity(status: os.stat_result) -> list[int]:
    """What of a file's status changes whenever its contents do: its change and modification
    times, its size and its inode."""
    return [status.st_ctime_ns, status.st_mtime_ns, status.st_size, status.st_ino]


def settled(status: os.stat_result) -> bool:
    """May this status stand for the file's contents? Not if the file changed in the last
    RACY_NS. (Windows reports the creation time as `st_ctime`: the modification time counts too.)"""
    return max(status.st_ctime_ns, status.st_mtime_ns) <= time.time_ns() - RACY_NS


_CHUNK = 1 << 20  # read at a time beyond a file's size (a file that grows while it is read)


def read_regular(path: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file; with a `limit`, at most `limit + 1` of them (so a caller
    sees that it is larger). It is opened without blocking and checked once open, so a FIFO is
    refused, never waited on. Read with `os` calls: a warm run reads every file of the tree,
    and `open()`'s file objects took twice as long (17 of a warm run's 190 ms)."""
    descriptor = nonblocking(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegular(not_regular(status.st_mode))
        cap = limit + 1 if limit is not None else sys.maxsize
        chunks: list[bytes] = []
        total = 0
        while total < cap:
            chunk = os.read(descriptor, min(cap - total, max(status.st_size + 1 - total, _CHUNK)))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(descriptor)



def display(path: str) -> str:
    """A path as it can be printed: bytes that are not valid UTF-8 (kept by the file system
    as surrogates) are shown as `\\xff` escapes."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return os.fsencode(path).decode("utf-8", errors="backslashreplace")
    return path


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
        byte = data[error.start]
        raise SourceError(f"not valid {encoding.upper()}: byte 0x{byte:02x} at offset {error.start}") from None
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


TEMPORARY_PREFIX, TEMPORARY_SUFFIX = ".odelint-", ".tmp"
_JOURNAL = b"odelint-journal "
_JOURNAL_WINDOW_NS = 10 * 10**9  # a file touched later than this after its journal was edited since


def temporary_name() -> str:
    """A temporary file's name that says which process wrote it, so a later run can tell a
    stale one (its writer was killed) from one being written now."""
    return f"{TEMPORARY_PREFIX}{os.getpid()}-{os.urandom(4).hex()}{TEMPORARY_SUFFIX}"


def is_temporary(name: str) -> bool:
    return name.startswith(TEMPORARY_PREFIX) and name.endswith(TEMPORARY_SUFFIX)


def _writer_alive(name: str) -> bool:
    parts = name[len(TEMPORARY_PREFIX):].split("-")
    if len(parts) != 2 or not parts[0].isdigit():
        return False  # an older odelint's name: its writer is long gone
    try:
        os.kill(int(parts[0]), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # alive, another user's
    return True


def remove_stale_temporary(folder: str, name: str) -> None:
    """Remove a temporary file whose writer was killed (SIGKILL runs no cleanup). A journal of
    an in-place write first puts the original back, unless the write finished or the file was
    edited since."""
    if not is_temporary(name) or _writer_alive(name):
        return
    temporary = os.path.join(folder, name)
    try:
        with open(temporary, "rb") as handle:
            header = handle.readline()
            if header.startswith(_JOURNAL):
                _recover(folder, header, handle.read(), os.fstat(handle.fileno()).st_mtime_ns)
        os.unlink(temporary)
    except (OSError, ValueError):
        pass


def remove_stale_temporaries(folder: str) -> None:
    try:
        names = [name for name in os.listdir(folder) if is_temporary(name)]
    except OSError:
        return
    for name in names:
        remove_stale_temporary(folder, name)


def _recover(folder: str, header: bytes, original: bytes, written_ns: int) -> None:
    import hashlib

    digest, name = header[len(_JOURNAL):].split()
    target = os.path.join(folder, os.fsdecode(bytes.fromhex(name.decode())))
    with open(target, "r+b") as handle:
        if os.fstat(handle.fileno()).st_mtime_ns > written_ns + _JOURNAL_WINDOW_NS:
            return
        if hashlib.sha256(handle.read()).hexdigest().encode() == digest:
            return
        handle.seek(0)
        handle.write(original)
        handle.truncate()
        os.fsync(handle.fileno())


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt while a file is written, so the write is
    undone and its temporary file removed (only the main thread may handle signals)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(number: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {number}")

    names = [name for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    previous = {name: signal.signal(getattr(signal, name), interrupt) for name in names}
    try:
        yield
    finally:
        for name, handler in previous.items():
            if handler is not None:  # None: set outside Python, cannot be put back from here
                signal.signal(getattr(signal, name), handler)


def atomic_write(path: str, data: bytes) -> None:
    """Replace a file's contents: old or new, never half.

    Normally through a temporary file in the same folder, renamed over the file; its permission
    bits, owner and group are kept (as far as this user may set them). A file with other hard
    links, or whose owner this user cannot give back, is written in place behind a journal of
    its old contents: an interrupted write is undone now, or by the next run after a SIGKILL.
    A symlink is written through to its target."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target) or "."
    status = os.stat(target)
    mode = stat.S_IMODE(status.st_mode)
    if not mode & stat.S_IWUSR or not os.access(target, os.W_OK):
        raise SourceError("file is read-only; not fixed")
    remove_stale_temporaries(folder)
    with _signals_interrupt():
        if status.st_nlink > 1 or not _replace(target, data, status):
            _write_in_place(target, data)


def _replace(target: str, data: bytes, status: os.stat_result) -> bool:
    """Write by renaming; False (nothing written) when the owner could not be kept."""
    temporary = os.path.join(os.path.dirname(target) or ".", temporary_name())
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            written = os.fstat(stream.fileno())
            if hasattr(os, "fchown") and (written.st_uid, written.st_gid) != (status.st_uid, status.st_gid):
                try:
                    os.fchown(stream.fileno(), status.st_uid, status.st_gid)
                except PermissionError:
                    if written.st_uid != status.st_uid:
                        os.unlink(temporary)
                        return False
                    # The owner, but not in the file's group: the group cannot be kept.
            stream.write(data)
            stream.flush()
            os.chmod(temporary, stat.S_IMODE(status.st_mode))
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise
    return True


def _write_in_place(target: str, data: bytes) -> None:
    import hashlib

    folder = os.path.dirname(target) or "."
    journal = os.path.join(folder, temporary_name())
    with open(target, "r+b") as handle:
        original = handle.read()
        header = _JOURNAL + hashlib.sha256(data).hexdigest().encode() + b" " + \
            os.fsencode(os.path.basename(target)).hex().encode() + b"\n"
        try:
            with open(journal, "xb") as keep:
                keep.write(header + original)
                keep.flush()
                os.fsync(keep.fileno())
            try:
                handle.seek(0)
                handle.write(data)
                handle.truncate()
                handle.flush()
                os.fsync(handle.fileno())
            except BaseException:
                handle.seek(0)
                handle.write(original)
                handle.truncate()
                handle.flush()
                raise
        finally:
            if os.path.lexists(journal):
                os.unlink(journal)
