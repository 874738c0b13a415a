"""A bare JSON-RPC client over a server process's pipes, for what pytest-lsp cannot send:
malformed bytes, a thousand edits as fast as the pipe takes them, a client that vanishes."""

from __future__ import annotations

import asyncio
import json
import sys

SERVER = [sys.executable, "-m", "odelint", "server", "--debounce", "0.2"]


class RawClient:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def start(cls) -> RawClient:
        process = await asyncio.create_subprocess_exec(*SERVER, stdin=asyncio.subprocess.PIPE,
                                                       stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.DEVNULL)
        return cls(process)

    async def send(self, message: dict | bytes) -> None:
        body = message if isinstance(message, bytes) else json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await self.process.stdin.drain()

    async def receive(self) -> dict:
        length = 0
        while (header := await self.process.stdout.readline()) not in (b"\r\n", b""):
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        return json.loads(await self.process.stdout.readexactly(length))

    async def wait_for(self, match, timeout: float = 30) -> dict:
        async def scan() -> dict:
            while not match(message := await self.receive()):
                pass
            return message
        return await asyncio.wait_for(scan(), timeout)

    async def initialize(self, root_uri: str) -> None:
        await self.send({"id": 1, "method": "initialize",
                         "params": {"processId": None, "capabilities": {}, "rootUri": root_uri}})
        await self.wait_for(lambda m: m.get("id") == 1)
        await self.send({"method": "initialized", "params": {}})

    async def close(self) -> None:
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
