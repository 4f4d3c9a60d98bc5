"""redis-py's asyncio Lock shared by the tasks of one event loop, as a
locktorture lock program; with --threads, its sync Lock shared by threads.

redis-py 4.3.4 (Debian's python3-redis) keeps a Lock's token in
threading.local() by default (thread_local=True), in redis.lock.Lock and in
redis.asyncio.lock.Lock alike. Threads each see their own token; the tasks
of one asyncio event loop all run on one thread, so they share one token
slot per Lock object: a task's release uses the token the last task's
acquire stored there, and deletes that task's lock.

Under the harness's --share K (protocol version 2) the K clients of this
process share ONE Lock per key, as the coroutines of an application share
the lock it made once:

- default: redis.asyncio.lock.Lock, each client served by an asyncio task
  of its own on one event loop (the bug);
- --threads: redis.lock.Lock, each client served by a thread of its own
  (lockproto.py's version 2), thread_local=True as well (the control).

The library's acquire loop, token and release run unchanged: a subclass
tells the harness before each command (do_acquire, do_release), and the
harness's wait and pacing go in as blocking_timeout and sleep. The key is
the harness's key and the value the request's token (acquire(token=...)).
Topology single only.
"""

import asyncio
import contextvars
import json
import os
import sys
import threading

import redis
import redis.asyncio
import redis.asyncio.lock
import redis.lock
from redis.exceptions import LockError, LockNotOwnedError

from lockproto import Harness
from routes import hostport

THREADS = "--threads" in sys.argv
PROMISES = {"renewal": False, "fencing": False, "validity": False}


def reply_of_release(err):
    """The reply to a release that raised err (None: it returned)."""
    if err is None:
        return {"outcome": "deleted"}
    if isinstance(err, LockNotOwnedError):  # the script found another value
        return {"outcome": "not_deleted"}
    if isinstance(err, LockError):  # no token in its slot: nothing was sent
        return {"outcome": "not_deleted"}
    return {"outcome": "unknown", "error": "%s: %s" % (type(err).__name__, err)}


# --- the control: the sync Lock, one thread per client ----------------------

def serve_threads():
    harness = Harness()
    hello = harness.hello
    ttl = hello["ttl_ms"] / 1000.0
    wait = hello["wait_ms"] / 1000.0
    pause = max(hello["retry"]["max_ms"], 1) / 1000.0
    timeout = hello["command_timeout_ms"] / 1000.0 or None
    host, port = hostport(hello["addrs"][0])
    client = redis.Redis(host=host, port=port, socket_timeout=timeout, socket_connect_timeout=timeout)

    class SteppedLock(redis.lock.Lock):
        def do_acquire(self, token):
            harness.step("attempt")
            return super().do_acquire(token)

        def do_release(self, expected_token):
            harness.step("release")
            return super().do_release(expected_token)

    shared, held, mu = {}, {}, threading.Lock()

    def lock_for(key):
        if not harness.shared:
            return SteppedLock(client, key, timeout=ttl, sleep=pause)
        with mu:
            if key not in shared:
                shared[key] = SteppedLock(client, key, timeout=ttl, sleep=pause)  # thread_local=True
            return shared[key]

    def acquire(key, token):
        lock = lock_for(key)
        try:
            ok = lock.acquire(blocking=wait > 0, blocking_timeout=wait, token=token)
        except Exception as e:
            return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
        if not ok:
            return {"outcome": "not_acquired"}
        with mu:
            held[token] = lock
        return {"outcome": "granted", "token": token}

    def release(key, token):
        with mu:
            lock = held.pop(token, None)
        if lock is None:
            return {"outcome": "unknown", "error": "no lock held under token " + token}
        try:
            lock.release()
        except Exception as e:
            return reply_of_release(e)
        return reply_of_release(None)

    harness.serve("redis-py-threads", redis.__version__, PROMISES, acquire, release, topologies=["single"])


# --- the bug: the asyncio Lock, one task per client -------------------------

# The id of the request a task serves, for its steps (0 in none).
REQUEST = contextvars.ContextVar("request", default=0)


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

    def send(self, msg):
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
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

    async def step(self, point):
        """Announce the next command and wait for the harness's go."""
        self.steps += 1
        n = self.steps
        fut = None
        if self.await_go:
            fut = self.goes[n] = asyncio.get_running_loop().create_future()
        self.send({"type": "step", "step": n, "point": point, "request": REQUEST.get()})
        if fut is not None:
            await fut
        return n

    async def serve(self, name, version, promises, acquire, release, **hello):
        self.send(dict(hello, type="hello", protocol=2 if self.shared else 1, name=name,
                       version=version, promises=promises, skips_go=True))
        loop = asyncio.get_running_loop()

        async def client_task(q):
            while True:
                req = await q.get()
                REQUEST.set(req["id"])
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


async def serve_tasks():
    h = AioHarness()
    await h.open()
    hello = h.hello
    ttl = hello["ttl_ms"] / 1000.0
    wait = hello["wait_ms"] / 1000.0
    pause = max(hello["retry"]["max_ms"], 1) / 1000.0
    timeout = hello["command_timeout_ms"] / 1000.0 or None
    host, port = hostport(hello["addrs"][0])
    client = redis.asyncio.Redis(host=host, port=port, socket_timeout=timeout, socket_connect_timeout=timeout)

    class SteppedLock(redis.asyncio.lock.Lock):
        async def do_acquire(self, token):
            await h.step("attempt")
            return await super().do_acquire(token)

        async def do_release(self, expected_token):
            await h.step("release")
            return await super().do_release(expected_token)

    shared, held = {}, {}

    def lock_for(key):
        if not h.shared:
            return SteppedLock(client, key, timeout=ttl, sleep=pause)
        if key not in shared:
            shared[key] = SteppedLock(client, key, timeout=ttl, sleep=pause)  # thread_local=True
        return shared[key]

    async def acquire(key, token):
        lock = lock_for(key)
        try:
            ok = await lock.acquire(blocking=wait > 0, blocking_timeout=wait, token=token)
        except Exception as e:
            return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
        if not ok:
            return {"outcome": "not_acquired"}
        held[token] = lock
        return {"outcome": "granted", "token": token}

    async def release(key, token):
        lock = held.pop(token, None)
        if lock is None:
            return {"outcome": "unknown", "error": "no lock held under token " + token}
        try:
            # release() reads the token slot and clears it at once, then
            # returns the coroutine that sends the compare-and-delete.
            await lock.release()
        except Exception as e:
            return reply_of_release(e)
        return reply_of_release(None)

    await h.serve("redis-py-asyncio", redis.__version__, PROMISES, acquire, release, topologies=["single"])


if THREADS:
    serve_threads()
else:
    asyncio.run(serve_tasks())
