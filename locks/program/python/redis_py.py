"""redis-py's own redis.lock.Lock as a locktorture lock program.

The library's acquire loop, token and release run unchanged: the subclass
only tells the harness before each command (do_acquire, do_release,
do_extend), and the harness's wait and pacing go in as blocking_timeout and
sleep. With --extend a thread calls extend(ttl, replace_ttl=True) every
TTL/3 while the lock is held, which is what redis-py's users write for long
work (thread_local=False, so that thread sees the token).

On the sentinel and cluster topologies the client is the one redis-py's
users build there, Sentinel(...).master_for(...) or RedisCluster(...);
every connection dials the address the hello's addr_map gives for the one a
server announced, so that it goes through this client's fault proxies.

Under the harness's --share K (protocol version 2) the K clients are
threads of this process and share ONE Lock object per key, as an
application's threads share the lock it made once. redis-py's default
thread_local=True keeps each thread's token apart; --shared-token builds
the shared Lock with thread_local=False, where one thread's release uses
the token another thread's acquire stored, and deletes that thread's lock.
"""

import sys
import threading

import redis
import redis.cluster
import redis.lock
import redis.sentinel

# hostport, MappedConnection and MappedSentinelConnection come from
# routes.py, which the harness runs before this file.

EXTEND = "--extend" in sys.argv
SHARED_TOKEN = "--shared-token" in sys.argv
harness = Harness()
hello = harness.hello
ttl, wait, pause, timeout = harness.ttl, harness.wait, harness.pause, harness.timeout


def connect():
    """The client redis-py's users write for the hello's topology."""
    set_addr_map(hello)
    kw = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    topology = hello.get("topology", "single")
    if topology == "sentinel":
        sentinel = redis.sentinel.Sentinel([hostport(a) for a in hello["sentinels"]], **kw)
        return sentinel.master_for(hello["master_name"], connection_class=MappedSentinelConnection, **kw)
    if topology == "cluster":
        # Only a cluster client given a url builds its nodes' pools from
        # its keyword arguments, connection_class among them (4.x).
        first, rest = hello["addrs"][0], hello["addrs"][1:]
        seeds = [redis.cluster.ClusterNode(*hostport(a)) for a in rest]
        return redis.cluster.RedisCluster(url="redis://" + first, startup_nodes=seeds,
                                          connection_class=MappedConnection, **kw)
    host, port = hostport(hello["addrs"][0])
    return redis.Redis(host=host, port=port, **kw)


client = connect()


class SteppedLock(redis.lock.Lock):
    def do_acquire(self, token):
        harness.step("attempt")
        return super().do_acquire(token)

    def do_release(self, expected_token):
        harness.step("release")
        return super().do_release(expected_token)

    def do_extend(self, additional_time, replace_ttl):
        harness.step("watchdog")
        return super().do_extend(additional_time, replace_ttl)


held = {}  # token -> (lock, stop event, extend thread)
shared = {}  # key -> the one Lock the threads share, under --share
shared_mu = threading.Lock()


def lock_for(key):
    """A Lock of its own per acquire, or under --share the key's one Lock."""
    if not harness.shared:
        return SteppedLock(client, key, timeout=ttl, sleep=pause, thread_local=not EXTEND)
    with shared_mu:
        if key not in shared:
            shared[key] = SteppedLock(client, key, timeout=ttl, sleep=pause,
                                      thread_local=not (EXTEND or SHARED_TOKEN))
        return shared[key]


def extender(lock, key, token, stop):
    while not stop.wait(ttl / 3):
        n = harness.renew(key, token)
        try:
            lock.extend(ttl, replace_ttl=True)
        except redis.lock.LockError as e:  # not owned any more
            harness.renewed(n, "lost", str(e))
            return
        except Exception as e:
            harness.renewed(n, "unknown", "%s: %s" % (type(e).__name__, e))
            continue
        harness.renewed(n, "extended")


def acquire(key, token):
    lock = lock_for(key)
    try:
        ok = lock.acquire(blocking=wait > 0, blocking_timeout=wait, token=token)
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    if not ok:
        return {"outcome": "not_acquired"}
    stop, thread = threading.Event(), None
    if EXTEND:
        thread = threading.Thread(target=extender, args=(lock, key, token, stop), daemon=True)
        thread.start()
    held[token] = (lock, stop, thread)
    return {"outcome": "granted", "token": token}


def release(key, token):
    lock, stop, thread = held.pop(token, (None, None, None))
    if lock is None:
        return {"outcome": "unknown", "error": "no lock held under token " + token}
    stop.set()
    if thread is not None:
        thread.join()
    try:
        lock.release()
    except redis.lock.LockNotOwnedError:
        return {"outcome": "not_deleted"}
    except redis.lock.LockError:  # no token of its own: nothing was sent
        return {"outcome": "not_deleted"}
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    return {"outcome": "deleted"}


NAME = "redis-py-extend" if EXTEND else "redis-py-shared-token" if SHARED_TOKEN else "redis-py"
harness.serve(NAME, redis.__version__,
              {"renewal": EXTEND, "fencing": False, "validity": False}, acquire, release)
