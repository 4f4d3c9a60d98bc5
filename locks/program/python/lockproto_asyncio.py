"""The program side of locktorture's lock protocol, versions 1 and 2, on an
asyncio event loop: lockproto.py's twin for a library whose lock is a
coroutine (redis.asyncio). A program makes an AioHarness, awaits open()
(the hello), then awaits serve() with two coroutine functions, one that
acquires a key and one that releases it; before each Redis command it
awaits step(point). Under version 2 each client is served by an asyncio
task of its own on the one loop, as the coroutines of an application share
the lock objects it made.
"""

import asyncio
import contextvars
import json
import os
import sys
import time

from lockproto import settings_from

# The id of the request a task serves, for its steps (0 in none), and
# whether its steps await their go (the request's await_go).
REQUEST = contextvars.ContextVar("request", default=0)
AWAIT = contextvars.ContextVar("await_go", default=True)


class AioHarness:
    """lockproto.py's protocol, versions 1 and 2, on an asyncio event loop.

    Everything runs on the loop's one thread: one task reads stdin (a go
    resolves its step's future; a request goes to its client's queue) and
    each client's requests are served in order by a task of that client's
    own. Lines are written whole by that one thread, so they never
    interleave.
    """

    def __init__(self):
        self.steps = 0
        self.goes = {}
        self.queues = {}
        self.tasks = []
        # step lines of unawaited steps, written with the next line: one
        # write, and one wake of the harness, a request
        self.held = b""

    def send(self, msg, hold=False):
        """Write msg as one line, after any step lines held back; with hold
        keep it for the next line instead."""
        data = self.held + (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        if hold:
            self.held = data
            return
        self.held = b""
        while data:
            data = data[os.write(1, data):]

    async def open(self):
        loop = asyncio.get_running_loop()
        self.reader = asyncio.StreamReader(limit=2 << 20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.reader), sys.stdin)
        line = await self.reader.readline()
        self.hello = json.loads(line) if line else {}
        if self.hello.get("type") != "hello":
            raise SystemExit("expected the harness's hello, got %r" % line)
        self.shared = self.hello.get("protocol") == 2
        self.await_go = self.hello.get("await_go", True)
        settings_from(self, self.hello)

    async def step(self, point):
        """Announce the next command, with the clock's reading just before
        it, and wait for the harness's go where the request awaits it (a
        step of no request always does)."""
        self.steps += 1
        n = self.steps
        fut = None
        request = REQUEST.get()
        if AWAIT.get() or not request:
            fut = self.goes[n] = asyncio.get_running_loop().create_future()
        # A step that awaits no go goes out with the request's reply (or
        # whatever line comes next): its reading, taken before its
        # command, is what dates it.
        self.send({"type": "step", "step": n, "point": point, "request": request,
                   "mono_ns": time.monotonic_ns()}, hold=fut is None)
        if fut is not None:
            await fut
        return n

    async def serve(self, name, version, promises, acquire, release, **hello):
        self.send(dict(hello, type="hello", protocol=2 if self.shared else 1, name=name,
                       version=version, promises=promises, skips_go=True, monotonic=True))
        loop = asyncio.get_running_loop()

        async def client_task(q):
            while True:
                req = await q.get()
                REQUEST.set(req["id"])
                AWAIT.set(req.get("await_go", self.await_go))
                fn = acquire if req["type"] == "acquire" else release
                reply = await fn(req["key"], req["token"])
                reply.update({"type": "reply", "id": req["id"]})
                self.send(reply)
                REQUEST.set(0)

        while True:
            line = await self.reader.readline()
            if not line:
                return  # stdin closed: the run is over
            msg = json.loads(line)
            if msg.get("type") == "go":
                fut = self.goes.pop(msg.get("step"), None)
                if fut is not None and not fut.done():
                    fut.set_result(None)
                continue
            if msg.get("type") not in ("acquire", "release"):
                continue
            c = msg.get("client", 0)
            q = self.queues.get(c)
            if q is None:
                q = self.queues[c] = asyncio.Queue()
                self.tasks.append(loop.create_task(client_task(q), context=contextvars.Context()))
            q.put_nowait(msg)
