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
import sys
import threading

import redis
import redis.asyncio
import redis.asyncio.lock
import redis.lock
from redis.exceptions import LockError, LockNotOwnedError

from lockproto import Harness
from lockproto_asyncio import AioHarness
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
    ttl, wait, pause, timeout = harness.ttl, harness.wait, harness.pause, harness.timeout
    host, port = hostport(harness.hello["addrs"][0])
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

async def serve_tasks():
    h = AioHarness()
    await h.open()
    ttl, wait, pause, timeout = h.ttl, h.wait, h.pause, h.timeout
    host, port = hostport(h.hello["addrs"][0])
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
