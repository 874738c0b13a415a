"""Reading LSP messages off stdin so that one badly framed message costs only itself.

pygls reads exactly `Content-Length` bytes and takes the next header only from a line that
is nothing but that header. A length that is too small leaves the rest of the body in front
of the next header, and every later message is lost; one that is too large waits for bytes
that never come. Here a header is found wherever it starts on a line, and a body is cut
short when it already holds one whole JSON object and the client has sent nothing more (or
the next header follows it). A strict prefix of a JSON object is never a whole JSON value,
so a correct message is never cut.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import select
import sys
import threading
from typing import TYPE_CHECKING, BinaryIO

from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:
    from pygls.server import JsonRPCServer

CHUNK = 1 << 16
_LENGTH = re.compile(rb"Content-Length[ \t]*:[ \t]*(\d+)", re.IGNORECASE)
_DECODER = json.JSONDecoder()


class Framer:
    """Message bodies, one at a time, from a byte stream (blocking)."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.fd: int | None
        try:
            self.fd = stream.fileno()
        except (AttributeError, OSError, io.UnsupportedOperation):
            self.fd = None
        self.buffer = bytearray()
        self.ended = False

    def message(self) -> bytes | None:
        """The next message's body; None at the end of input."""
        length = self._header()
        return None if length is None else self._body(length)

    def _fill(self) -> bool:
        """Read what has arrived (waiting until something has); False at the end of input."""
        if self.ended:
            return False
        chunk = os.read(self.fd, CHUNK) if self.fd is not None else self.stream.read1(CHUNK)  # type: ignore[attr-defined]
        if not chunk:
            self.ended = True
            return False
        self.buffer += chunk
        return True

    def _idle(self) -> bool:
        """Whether the client has sent nothing more for now (reading would wait)."""
        if self.fd is None:
            return False
        try:
            return not select.select([self.fd], [], [], 0)[0]
        except (OSError, ValueError):
            return False

    def _header(self) -> int | None:
        length: int | None = None
        while True:
            end = self.buffer.find(b"\n")
            while end < 0:
                if not self._fill():
                    return None
                end = self.buffer.find(b"\n")
            line = bytes(self.buffer[:end + 1])
            del self.buffer[:end + 1]
            match = _LENGTH.search(line)  # also after the leftovers of a body cut too short
            if match:
                length = int(match.group(1))
            elif not line.strip() and length is not None:
                return length

    def _body(self, length: int) -> bytes:
        while len(self.buffer) < length:
            if self._idle() or _LENGTH.search(self.buffer):
                end = _whole_object(self.buffer)
                if end is not None:  # the length was too large
                    return self._take(end)
            if not self._fill():
                return self._take(len(self.buffer))
        if _LENGTH.search(self.buffer, 0, length):
            end = _whole_object(self.buffer[:length])
            if end is not None:
                return self._take(end)
        return self._take(length)

    def _take(self, count: int) -> bytes:
        body = bytes(self.buffer[:count])
        del self.buffer[:count]
        return body


def _whole_object(data: bytes | bytearray) -> int | None:
    """The byte length of the JSON object `data` starts with, or None when it holds no whole one."""
    text = bytes(data).decode("latin-1")  # one character per byte: the end index is a byte offset
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return None
    try:
        return _DECODER.raw_decode(text, start)[1]
    except ValueError:
        return None


async def _serve(server: JsonRPCServer, framer: Framer) -> None:
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    def read() -> None:
        while True:
            body = framer.message()
            loop.call_soon_threadsafe(queue.put_nowait, body)
            if body is None:
                return

    # A daemon thread: one blocked on stdin must not keep the process alive after `exit`.
    threading.Thread(target=read, name="odelint-lsp-reader", daemon=True).start()
    while (body := await queue.get()) is not None:
        try:
            message = json.loads(body, object_hook=server.protocol.structure_message)
            server.protocol.handle_message(message)
        except Exception as error:  # noqa: BLE001 - one bad message must not stop the server
            server._report_server_error(error, JsonRpcException)


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> int:
    """Serve until `exit` or the end of input. The exit code is the LSP spec's: 0 after
    `shutdown`, 1 for an `exit` without it (or input that ended without either)."""
    from pygls.io_ import StdoutWriter

    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
    code = 1
    try:
        asyncio.run(_serve(server, Framer(stdin or sys.stdin.buffer)))
        code = 0 if server.protocol._shutdown else 1
    except SystemExit as exiting:  # pygls's `exit` handler
        code = exiting.code if isinstance(exiting.code, int) else 1
    except (BrokenPipeError, KeyboardInterrupt):
        code = 1
    finally:
        server.shutdown()
    return code
