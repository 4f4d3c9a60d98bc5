"""The yardstick of the redis-py lock program: redis-py's own Lock in a
plain loop, with no harness and no protocol. One process of it makes the
calls one client of `--lock redis-py --hold 0s..0s` makes, with the same
arguments (acquire a random key, waiting up to WAIT_MS with redis-py's
fixed pause of SLEEP_MS between attempts; release it at once; next key) for
a number of seconds, then prints its lock operations (acquires and
releases) as one JSON line. With WAIT_MS 0 each acquire is one attempt.

    python3 raw_loop.py HOST:PORT SECONDS KEYS TTL_MS SEED [WAIT_MS SLEEP_MS]
"""

import json
import random
import sys
import time

import redis
import redis.lock

host, port = sys.argv[1].rsplit(":", 1)
seconds, keys, ttl = float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]) / 1000.0
rng = random.Random(int(sys.argv[5]))
wait = int(sys.argv[6]) / 1000.0 if len(sys.argv) > 6 else 0.0
pause = int(sys.argv[7]) / 1000.0 if len(sys.argv) > 7 else 0.1
client = redis.Redis(host=host, port=int(port))
client.ping()
ops, n, end = 0, 0, time.monotonic() + seconds
while time.monotonic() < end:
    n += 1
    lock = redis.lock.Lock(client, "lock:%d" % rng.randrange(keys), timeout=ttl, sleep=pause, thread_local=True)
    ops += 1
    if lock.acquire(blocking=wait > 0, blocking_timeout=wait, token="raw-%s-%d" % (sys.argv[5], n)):
        lock.release()
        ops += 1
print(json.dumps({"ops": ops, "seconds": seconds}))
