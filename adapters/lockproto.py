"""The adapter side of locklab's soak protocol (docs/ADAPTERS.md).

`locklab soak --client CMD` starts CMD once per client and writes one JSON request per
line on its stdin; the adapter answers each on one line of its stdout, in order:

  {"op": "start", "urls": [...], "key": ..., "ttl_ms": ..., ...}
      -> {"ready": true, "library": "name version", "key": "the Redis key it writes"}
  {"op": "acquire", "token": "c0.1:3"}  -> {"granted": true, "token": "..."}
  {"op": "extend"} / {"op": "release"}  -> {"granted": true} | {"granted": false}
  anything the library raises            -> {"error": "ExceptionName: its text"}

`serve` runs that loop; an adapter gives it a `start` function that sets the library
up and returns an object with `acquire(token)`, `release()` and, if the application
must call it, `extend()`. The harness keeps the clock and runs the critical section
itself: an adapter only calls the library.
"""

import json
import sys


def error_text(error):
    return f"{type(error).__name__}: {error}"


def serve(start):
    lock = None
    for line in sys.stdin:
        request = json.loads(line)
        op = request.get("op")
        try:
            if op == "start":
                lock, ready = start(request)
                answer = {"ready": True, **ready}
            elif lock is None:
                answer = {"error": f"`{op}` before `start`"}
            elif op == "acquire":
                answer = lock.acquire(request["token"])
            elif op == "extend":
                answer = lock.extend()
            elif op == "release":
                answer = lock.release()
            else:
                answer = {"error": f"unknown op {op!r}"}
        except Exception as error:  # the library's own exception, as text
            answer = {"error": error_text(error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


def wait_for_replicas(client, request, release):
    """`WAIT n timeout` after an acquire, as an application sends it on the library's
    connection (redis-py's pool hands the connection just used back first). Fewer
    acknowledgements than asked: the lock is released and the attempt fails, as
    locklab's own `WAIT` option does. Returns the answer to give, or None when fine."""
    wanted = request["wait_replicas"]
    if not wanted:
        return None
    acks = client.wait(wanted, request["wait_timeout_ms"])
    if acks >= wanted:
        return None
    release()
    return {"error": f"WAIT {wanted}: {acks} replicas acknowledged the acquire; released"}
