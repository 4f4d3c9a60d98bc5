"""redis-py's Lock kept alive with reacquire(), as a locktorture lock program.

redis-py 4.3.4 (Debian's python3-redis) takes Lock(timeout=0) for a lock
with no expiry: do_acquire sends SET key token NX without PX, since 0 is
falsy. reacquire() only refuses timeout None, so on such a lock it runs its
script with a TTL of 0, and the script's PEXPIRE key 0 deletes the key; the
script still returns 1, and reacquire() returns True
(redis/redis-py#4279).

While the lock is held a thread calls lock.reacquire() every TTL/3, the
keep-alive redis-py's users write for long work (thread_local=False, so
that thread sees the token), and reports each call as a renewal (renew,
renewed). The library's acquire loop, token, reacquire and release run
unchanged: a subclass tells the harness before each command (do_acquire,
do_reacquire, do_release), and the harness's wait and pacing go in as
blocking_timeout and sleep. Key: the harness's key; value: the request's
token.

- default: Lock(timeout=TTL): SET NX PX ttl, and each reacquire sets the
  key's TTL back to it (the control);
- --timeout-zero: Lock(timeout=0): a key that never expires, deleted by
  the first reacquire (the bug). The harness's TTL then sets only the
  keep-alive's period (TTL/3) and the time the harness counts a lease
  valid from its acquire or its last renewal; the key has no TTL at all.

Topology single only.
"""

import sys
import threading

import redis
import redis.lock
from redis.exceptions import LockError, LockNotOwnedError

from lockproto import Harness
from routes import hostport

TIMEOUT_ZERO = "--timeout-zero" in sys.argv
harness = Harness()
hello = harness.hello
ttl, wait, pause, command_timeout = harness.ttl, harness.wait, harness.pause, harness.timeout
host, port = hostport(hello["addrs"][0])
client = redis.Redis(host=host, port=port, socket_timeout=command_timeout,
                     socket_connect_timeout=command_timeout)
# What the program tells the library: 0 is redis-py's "no expiry".
timeout = 0 if TIMEOUT_ZERO else ttl


class SteppedLock(redis.lock.Lock):
    def do_acquire(self, token):
        harness.step("attempt")
        return super().do_acquire(token)

    def do_reacquire(self):
        harness.step("watchdog")
        return super().do_reacquire()

    def do_release(self, expected_token):
        harness.step("release")
        return super().do_release(expected_token)


held = {}  # token -> (lock, stop event, keep-alive thread)


def keep_alive(lock, key, token, stop):
    while not stop.wait(ttl / 3):
        n = harness.renew(key, token)
        try:
            lock.reacquire()
        except LockNotOwnedError as e:  # the script found another value, or none
            harness.renewed(n, "lost", str(e))
            return
        except LockError as e:  # no token, or no timeout: nothing was sent
            harness.renewed(n, "lost", str(e))
            return
        except Exception as e:
            harness.renewed(n, "unknown", "%s: %s" % (type(e).__name__, e))
            continue
        harness.renewed(n, "extended")


def acquire(key, token):
    lock = SteppedLock(client, key, timeout=timeout, sleep=pause, thread_local=False)
    try:
        ok = lock.acquire(blocking=wait > 0, blocking_timeout=wait, token=token)
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    if not ok:
        return {"outcome": "not_acquired"}
    stop = threading.Event()
    thread = threading.Thread(target=keep_alive, args=(lock, key, token, stop), daemon=True)
    thread.start()
    held[token] = (lock, stop, thread)
    return {"outcome": "granted", "token": token}


def release(key, token):
    lock, stop, thread = held.pop(token, (None, None, None))
    if lock is None:
        return {"outcome": "unknown", "error": "no lock held under token " + token}
    stop.set()
    thread.join()
    try:
        lock.release()
    except LockNotOwnedError:
        return {"outcome": "not_deleted"}
    except LockError:  # no token of its own: nothing was sent
        return {"outcome": "not_deleted"}
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    return {"outcome": "deleted"}


harness.serve("redis-py-reacquire-timeout-zero" if TIMEOUT_ZERO else "redis-py-reacquire", redis.__version__,
              {"renewal": True, "fencing": False, "validity": False}, acquire, release, topologies=["single"])
