"""Stands between the harness and a lock program and hands the harness the
program's step lines late: a busy harness, reading a step long after the
program wrote it and sent its command.

    late_reader.py DELAY_MS MODE PROGRAM ARGS...

Every line the harness writes goes to the program at once. Of an
even-numbered client (the hello's "client"), each step line the program
prints reaches the harness DELAY_MS late, and every line after it waits its
turn; an odd client's lines pass at once, so its grants are seen when they
come while the even clients' steps are seen late. MODE keep passes the
program's CLOCK_MONOTONIC reading as it is; MODE restamp replaces it with
this process's reading as it hands the line over, as a harness dating a
step by its receipt would.
"""

import json
import queue
import subprocess
import sys
import threading
import time


def main():
    delay, mode, argv = int(sys.argv[1]) / 1000.0, sys.argv[2], sys.argv[3:]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    hello = sys.stdin.buffer.readline()
    late = json.loads(hello).get("client", 0) % 2 == 0
    child.stdin.write(hello)
    child.stdin.flush()

    def down():
        for line in sys.stdin.buffer:
            child.stdin.write(line)
            child.stdin.flush()
        child.stdin.close()  # the run is over: the program exits, then this

    threading.Thread(target=down, daemon=True).start()
    # Lines are stamped as they arrive and handed over in order, a step
    # line not before DELAY_MS after it came: the delay does not pile up
    # over a run of quick attempts.
    lines = queue.Queue()

    def up():
        for line in child.stdout:
            lines.put((time.monotonic(), line))
        lines.put((0, None))

    threading.Thread(target=up, daemon=True).start()
    out = sys.stdout.buffer
    while True:
        came, line = lines.get()
        if line is None:
            break
        if late and b'"type":"step"' in line:
            time.sleep(max(0.0, came + delay - time.monotonic()))
            if mode == "restamp":
                msg = json.loads(line)
                msg["mono_ns"] = time.monotonic_ns()
                line = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        out.write(line)
        out.flush()
    child.wait()


if __name__ == "__main__":
    main()
