"""redis-py's `Lock` (redis.lock.Lock) through locklab's soak protocol.

    adapter.py [--blocking] [--extend]

--blocking: `acquire` blocks, polling every 0.1 s (the library's `sleep`), for at most
one ttl (`blocking_timeout`); without it one try (`blocking=False`).
--extend: the application calls `lock.extend(ttl)` while it holds the lock (the
library's default: the ttl is added to what is left); the scenario renews with the
library's extend script.
The client is made as applications often make it, `redis.Redis.from_url(url)`, with
socket timeouts set to the soak's command timeout. Made so, redis-py 8.1.0 does not
retry a command on a connection error (a client made with `redis.Redis(host=...,
port=...)` retries 10 times): a lost reply is a ConnectionError to the caller.
"""

import argparse
import os
import sys

import redis

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lockproto import serve, wait_for_replicas  # noqa: E402

options = argparse.ArgumentParser()
options.add_argument("--blocking", action="store_true")
options.add_argument("--extend", action="store_true")
args = options.parse_args()


class Adapter:
    def __init__(self, request):
        timeout = request["timeout_ms"] / 1000
        self.client = redis.Redis.from_url(
            request["urls"][0], socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.ttl = request["ttl_ms"] / 1000
        self.request = request
        self.lock = self.client.lock(
            request["key"],
            timeout=self.ttl,
            blocking=args.blocking,
            blocking_timeout=self.ttl if args.blocking else None,
        )

    def acquire(self, token):
        if not self.lock.acquire(token=token):
            return {"granted": False}
        failed = wait_for_replicas(self.client, self.request, self.lock.release)
        return failed or {"granted": True, "token": token}

    def extend(self):
        self.lock.extend(self.ttl)  # raises LockNotOwnedError when not ours
        return {"granted": True}

    def release(self):
        self.lock.release()  # raises LockNotOwnedError when not ours
        return {"granted": True}


def start(request):
    ready = {"library": f"redis-py {redis.__version__}", "key": request["key"], "extends": args.extend}
    return Adapter(request), ready


serve(start)
