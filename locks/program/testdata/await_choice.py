"""A lock program that grants every acquire (its lock is a flag in the
process: what is under test is the harness's choice, not a lock) and
appends each request's await_go to the file $AWAIT_LOG, one line per
request: "acquire 1" awaited, "release 0" not. Its steps carry their
CLOCK_MONOTONIC reading, so the harness may let them go unawaited."""

import json
import os
import sys
import time

log = open(os.environ["AWAIT_LOG"], "a", buffering=1)
out = sys.stdout
hello = json.loads(sys.stdin.readline())
out.write(json.dumps({"type": "hello", "protocol": 1, "name": "await-choice", "version": "0",
                      "skips_go": True, "monotonic": True}) + "\n")
out.flush()
n = 0
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] not in ("acquire", "release"):
        continue  # a go nobody waits for
    wait = req.get("await_go", hello.get("await_go", True))
    log.write("%s %d\n" % (req["type"], 1 if wait else 0))
    n += 1
    point = "attempt" if req["type"] == "acquire" else "release"
    out.write(json.dumps({"type": "step", "step": n, "point": point, "request": req["id"],
                          "mono_ns": time.monotonic_ns()}) + "\n")
    out.flush()
    while wait:
        m = json.loads(sys.stdin.readline() or "null")
        if m is None:
            sys.exit(0)
        wait = not (m.get("type") == "go" and m.get("step") == n)
    outcome = "granted" if req["type"] == "acquire" else "deleted"
    out.write(json.dumps({"type": "reply", "id": req["id"], "outcome": outcome}) + "\n")
    out.flush()
