"""The program side of locktorture's lock protocol, version 1, for Python.

docs/lock-protocol.md is the spec; this module is its Python example. A
lock program builds a Harness, then calls serve() with two functions: one
that acquires a key, one that releases it. Before each Redis command it
sends, the lock calls step(point) and waits there for the harness's "go";
a background renewal calls renew() and renewed(). Only protocol lines go
to stdout; anything else belongs on stderr.
"""

import json
import queue
import sys
import threading

PROTOCOL = 1


class Harness:
    def __init__(self, stdin=sys.stdin, stdout=sys.stdout):
        self._in, self._out = stdin, stdout
        self._wlock = threading.Lock()
        self._lock = threading.Lock()
        self._steps = 0
        self._renewals = 0
        self._goes = {}
        self._requests = queue.Queue()
        self._main = threading.current_thread()
        self.request = 0  # the id of the request the main thread serves
        line = self._in.readline()
        self.hello = json.loads(line) if line else {}
        if self.hello.get("type") != "hello":
            raise SystemExit("expected the harness's hello, got %r" % line)
        self._await = self.hello.get("await_go", True)

    def send(self, msg):
        line = json.dumps(msg, separators=(",", ":")) + "\n"
        with self._wlock:
            self._out.write(line)
            self._out.flush()

    def step(self, point):
        """Announce the next command and wait for the harness's go."""
        with self._lock:
            self._steps += 1
            n = self._steps
            if self._await:
                ev = self._goes[n] = threading.Event()
        req = self.request if threading.current_thread() is self._main else 0
        self.send({"type": "step", "step": n, "point": point, "request": req})
        if self._await:
            ev.wait()
        return n

    def renew(self, key, token):
        """Announce a background renewal; pass its number to renewed()."""
        with self._lock:
            self._renewals += 1
            n = self._renewals
        self.send({"type": "renew", "renewal": n, "key": key, "token": token})
        return n

    def renewed(self, n, outcome, error=""):
        msg = {"type": "renewed", "renewal": n, "outcome": outcome}
        if error:
            msg["error"] = error
        self.send(msg)

    def _read(self):
        for line in self._in:
            msg = json.loads(line)
            if msg.get("type") == "go":
                with self._lock:
                    ev = self._goes.pop(msg["step"], None)
                if ev is not None:
                    ev.set()
            else:
                self._requests.put(msg)
        self._requests.put(None)

    def serve(self, name, version, promises, acquire, release):
        """Answer the hello, then serve requests until stdin ends.

        acquire(key, token) and release(key, token) return the reply's
        fields: {"outcome": ...} and whatever else the outcome carries.
        """
        self.send({"type": "hello", "protocol": PROTOCOL, "name": name,
                   "version": version, "promises": promises})
        threading.Thread(target=self._read, daemon=True).start()
        while True:
            req = self._requests.get()
            if req is None:
                return
            self.request = req["id"]
            if req["type"] == "acquire":
                reply = acquire(req["key"], req["token"])
            else:
                reply = release(req["key"], req["token"])
            reply.update({"type": "reply", "id": req["id"]})
            self.send(reply)
            self.request = 0
