"""The program side of locktorture's lock protocol, versions 1 and 2, for Python.

docs/lock-protocol.md is the spec; this module is its Python example. A
lock program builds a Harness, then calls serve() with two functions: one
that acquires a key, one that releases it. Before each Redis command it
sends, the lock calls step(point): the step carries this process's
CLOCK_MONOTONIC reading (time.monotonic_ns()), and waits for the
harness's "go" only where the request asked for it (its await_go: a fault
may act there) or where no request is served (a background renewal); a
background renewal calls renew() and renewed() too. Only protocol lines go
to stdout; anything else belongs on stderr.

A program without background work reads its stdin on the thread that
serves the requests: every line costs no hand-over between threads, which
in CPython is most of what a request costs beyond its Redis commands. One
that renews in the background (serve(..., promises={"renewal": True}))
reads on a thread of its own, since a renewal waits for its go while the
main thread may be waiting for Redis.

Version 2 (the harness's --share K) serves the K clients of one shared lock
object in this one process: a reader thread reads stdin, and each client's
requests run on a thread of that client's own, so that up to K requests
are served at once, as the threads of one application use one lock.
"""

import json
import os
import queue
import sys
import threading
import time

PROTOCOL = 1
SHARED = 2  # the version that serves several clients at once
# A step line, formatted rather than encoded: it is most of the lines.
STEP = '{"type":"step","step":%d,"point":%s,"request":%d,"mono_ns":%d}\n'
# One encoder for every line: json.dumps with separators builds a new one
# each call.
ENCODE = json.JSONEncoder(separators=(",", ":")).encode


def settings_from(h, hello):
    """Sets on h the hello's settings in seconds, as a Python library takes
    them: ttl, wait (how long one acquire may retry), pause (the fixed pause
    between attempts: the retry's longest) and timeout (per command; None
    for the library's own)."""
    h.ttl = hello.get("ttl_ms", 0) / 1000.0
    h.wait = hello.get("wait_ms", 0) / 1000.0
    h.pause = max(hello.get("retry", {}).get("max_ms", 1), 1) / 1000.0
    h.timeout = hello.get("command_timeout_ms", 0) / 1000.0 or None


class Harness:
    def __init__(self, stdin=None, stdout_fd=1):
        self._in = stdin if stdin is not None else sys.stdin.buffer
        self._fd = stdout_fd
        self._wlock = threading.Lock()
        self._lock = threading.Lock()
        self._steps = 0
        self._renewals = 0
        self._goes = {}
        self._requests = None  # a queue once a reader thread reads stdin
        # the id of the request this thread serves; none in background
        # threads (a renewal), whose steps say request 0
        self._local = threading.local()
        # step lines of unawaited steps, written with the next line (see
        # send): one write, and one wake of the harness, a request
        self._held = b""
        line = self._in.readline()
        self.hello = json.loads(line) if line else {}
        if self.hello.get("type") != "hello":
            raise SystemExit("expected the harness's hello, got %r" % line)
        # Version 2: the clients this process serves, sharing its locks.
        self.shared = self.hello.get("protocol") == SHARED
        self.clients = self.hello.get("clients") or [self.hello.get("client", 0)]
        self._await = self.hello.get("await_go", True)
        settings_from(self, self.hello)

    def send(self, msg, hold=False):
        """Write msg as one line, after any step lines held back; with hold
        keep it for the next line instead."""
        self._write((ENCODE(msg) + "\n").encode(), hold)

    def _write(self, data, hold=False):
        with self._wlock:
            data = self._held + data
            if hold:
                self._held = data
                return
            self._held = b""
            while data:  # one write, unless the pipe takes it in parts
                data = data[os.write(self._fd, data):]

    def step(self, point):
        """Announce the next command, with the clock's reading just before
        it, and wait for the harness's go where the request awaits it (a
        step of no request always does)."""
        request = getattr(self._local, "request", 0)
        wait = getattr(self._local, "await_go", self._await) if request else True
        with self._lock:
            self._steps += 1
            n = self._steps
            if wait and self._requests is not None:
                ev = self._goes[n] = threading.Event()
        # A step that awaits no go goes out with the request's reply (or
        # whatever line comes next): its reading, taken before its
        # command, is what dates it, not when the harness reads it.
        self._write((STEP % (n, json.dumps(point), request, time.monotonic_ns())).encode(), hold=not wait)
        if not wait:
            return n
        if self._requests is not None:
            ev.wait()
            return n
        # Read on this thread: in version 1 nothing but go lines comes
        # while a request is served.
        while True:
            msg = self._next()
            if msg is None:
                raise SystemExit(0)  # stdin closed: the run is over
            if msg.get("type") == "go" and msg.get("step") == n:
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

    def _next(self):
        line = self._in.readline()
        return json.loads(line) if line else None

    def _read(self):
        while True:
            msg = self._next()
            if msg is None:
                break
            if msg.get("type") == "go":
                with self._lock:
                    ev = self._goes.pop(msg["step"], None)
                if ev is not None:
                    ev.set()
            else:
                self._requests.put(msg)
        self._requests.put(None)

    def _request(self):
        if self._requests is not None:
            return self._requests.get()
        while True:
            msg = self._next()
            if msg is None or msg.get("type") != "go":
                return msg  # a go nobody waited for is skipped

    def serve(self, name, version, promises, acquire, release, **hello):
        """Answer the hello, then serve requests until stdin ends.

        acquire(key, token) and release(key, token) return the reply's
        fields: {"outcome": ...} and whatever else the outcome carries.
        hello adds fields to the program's hello: key_template (the key
        the lock writes, "{key}" standing for the one asked for) and
        topologies (those the program serves).
        """
        if promises.get("renewal") or self.shared:
            self._requests = queue.Queue()
        # skips_go: this program sends at once when a request's await_go
        # is false, so the harness need not send those go lines at all;
        # monotonic: every step carries mono_ns, by which the harness
        # dates a lease whose command did not wait.
        self.send(dict(hello, type="hello", protocol=SHARED if self.shared else PROTOCOL,
                       name=name, version=version, promises=promises, skips_go=True,
                       monotonic=True))
        if self._requests is not None:
            threading.Thread(target=self._read, daemon=True).start()
        if self.shared:
            return self._serve_threads(acquire, release)
        while True:
            req = self._request()
            if req is None:
                return
            self._answer(req, acquire, release)

    def _answer(self, req, acquire, release):
        self._local.request = req["id"]
        self._local.await_go = req.get("await_go", self._await)
        if req["type"] == "acquire":
            reply = acquire(req["key"], req["token"])
        else:
            reply = release(req["key"], req["token"])
        reply.update({"type": "reply", "id": req["id"]})
        self.send(reply)
        self._local.request = 0

    def _serve_threads(self, acquire, release):
        """Version 2: each client's requests on a thread of its own."""
        def work(q):
            while True:
                req = q.get()
                if req is None:
                    return
                self._answer(req, acquire, release)
        queues = {}
        while True:
            req = self._requests.get()
            if req is None:
                return  # stdin closed: the run is over
            q = queues.get(req.get("client", 0))
            if q is None:
                q = queues[req.get("client", 0)] = queue.Queue()
                threading.Thread(target=work, args=(q,), daemon=True).start()
            q.put(req)
