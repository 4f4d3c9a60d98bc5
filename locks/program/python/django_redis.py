"""django-redis's cache.lock as a locktorture lock program.

A Django service takes a lock with cache.lock(name, timeout=...): django-redis
turns the name into a cache key with Django's key function (":1:<name>"
with the default KEY_PREFIX "" and VERSION 1) and hands back redis-py's own
redis.lock.Lock on that key. The lock therefore writes another key than the
one it is asked to take, and the hello says which, as a template built by
Django's own make_key: the harness's faults read leases on the servers
under that key. Each grant names its key too.

The settings are the ones a Django project writes: a DefaultClient on
single, django-redis's SentinelClient with its SentinelConnectionFactory on
sentinel. django-redis 5.2 has no Redis Cluster client; on cluster the
connection factory (django-redis's extension point,
DJANGO_REDIS_CONNECTION_FACTORY) hands it redis-py's RedisCluster, the
recipe its users follow. Every connection dials the hello's addr_map
target (routes.py), so it goes through this client's fault proxies.

The lock's acquire loop, token and release run unchanged; each lock object
only tells the harness before its SET and its release script.
"""

import sys

try:
    import django
    from django.conf import settings
    import django_redis.pool
except ImportError as e:
    sys.stderr.write("django-redis lock program: %s: install Debian's python3-django-redis "
                     "(scripts/install-deps.sh)\n" % e)
    sys.exit(1)

import redis
import redis.cluster
import redis.lock

harness = Harness()
hello = harness.hello
ttl, wait, pause, timeout = harness.ttl, harness.wait, harness.pause, harness.timeout
set_addr_map(hello)


class ClusterConnectionFactory(django_redis.pool.ConnectionFactory):
    """Connects django-redis's client to a Redis Cluster: the seeds of the
    hello, each node dialled through its mapped address."""

    def get_connection(self, params):
        first, rest = hello["addrs"][0], hello["addrs"][1:]
        seeds = [redis.cluster.ClusterNode(*hostport(a)) for a in rest]
        return redis.cluster.RedisCluster(url="redis://" + first, startup_nodes=seeds,
                                          connection_class=MappedConnection,
                                          socket_timeout=timeout, socket_connect_timeout=timeout)

    def disconnect(self, connection):
        connection.close()


def configure():
    """Django's settings for the hello's topology."""
    options = {"CLIENT_CLASS": "django_redis.client.DefaultClient"}
    if timeout:
        options.update(SOCKET_TIMEOUT=timeout, SOCKET_CONNECT_TIMEOUT=timeout)
    extra = {}
    topology = hello.get("topology", "single")
    if topology == "sentinel":
        location = "redis://%s/0" % hello["master_name"]
        options.update(CLIENT_CLASS="django_redis.client.SentinelClient",
                       SENTINELS=[hostport(a) for a in hello["sentinels"]],
                       CONNECTION_POOL_KWARGS={"connection_class": MappedSentinelConnection})
        extra["DJANGO_REDIS_CONNECTION_FACTORY"] = "django_redis.pool.SentinelConnectionFactory"
    elif topology == "cluster":
        location = "redis://" + hello["addrs"][0]
        extra["DJANGO_REDIS_CONNECTION_FACTORY"] = "__main__.ClusterConnectionFactory"
    else:
        location = "redis://%s/0" % hello["addrs"][0]
    settings.configure(CACHES={"default": {"BACKEND": "django_redis.cache.RedisCache",
                                           "LOCATION": location, "OPTIONS": options}}, **extra)
    django.setup()


configure()
from django.core.cache import cache  # noqa: E402 (needs the settings)


def stepped(lock):
    """lock, telling the harness before each command it sends."""
    do_acquire, do_release = lock.do_acquire, lock.do_release

    def acquire_step(token):
        harness.step("attempt")
        return do_acquire(token)

    def release_step(expected_token):
        harness.step("release")
        return do_release(expected_token)

    lock.do_acquire, lock.do_release = acquire_step, release_step
    return lock


held = {}  # token -> the lock object


def acquire(key, token):
    try:
        lock = stepped(cache.lock(key, timeout=ttl, sleep=pause))
        ok = lock.acquire(blocking=wait > 0, blocking_timeout=wait, token=token)
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    if not ok:
        return {"outcome": "not_acquired"}
    held[token] = lock
    return {"outcome": "granted", "token": token, "key": str(lock.name)}


def release(key, token):
    lock = held.pop(token, None)
    if lock is None:
        return {"outcome": "unknown", "error": "no lock held under token " + token}
    try:
        lock.release()
    except redis.lock.LockNotOwnedError:
        return {"outcome": "not_deleted"}
    except redis.lock.LockError:
        return {"outcome": "not_deleted"}
    except Exception as e:
        return {"outcome": "unknown", "error": "%s: %s" % (type(e).__name__, e)}
    return {"outcome": "deleted"}


import django_redis  # noqa: E402

harness.serve("django-redis", getattr(django_redis, "__version__", "?"),
              {"renewal": False, "fencing": False, "validity": False}, acquire, release,
              key_template=str(cache.make_key("{key}")),
              topologies=["single", "sentinel", "cluster"])
