"""python-redis-lock's `redis_lock.Lock` through locklab's soak protocol.

    adapter.py [--auto-renewal]

One `Lock` per attempt, with the harness's token as its `id`, `expire` = the ttl in
whole seconds (the library counts seconds: SET NX EX), `acquire(blocking=False)`.
--auto-renewal: the library's renewal thread extends the lock every expire*2/3 s while
held (it dies, silently for the holder, on the first failed extend).
The client is `redis.StrictRedis.from_url(url)` with socket timeouts set to the
soak's command timeout (made so, redis-py does not retry on a connection error).
"""

import argparse
import os
import sys

import redis
import redis_lock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lockproto import serve, wait_for_replicas  # noqa: E402

options = argparse.ArgumentParser()
options.add_argument("--auto-renewal", action="store_true")
args = options.parse_args()


class Adapter:
    def __init__(self, request):
        if request["ttl_ms"] % 1000:
            raise ValueError(
                f"python-redis-lock's expire is whole seconds; the scenario's ttl is {request['ttl_ms']} ms"
            )
        timeout = request["timeout_ms"] / 1000
        self.client = redis.StrictRedis.from_url(
            request["urls"][0], socket_timeout=timeout, socket_connect_timeout=timeout
        )
        self.expire = request["ttl_ms"] // 1000
        self.request = request
        self.lock = None

    def acquire(self, token):
        self.lock = redis_lock.Lock(
            self.client, self.request["key"], expire=self.expire, id=token, auto_renewal=args.auto_renewal
        )
        if not self.lock.acquire(blocking=False):
            return {"granted": False}
        failed = wait_for_replicas(self.client, self.request, self.lock.release)
        return failed or {"granted": True, "token": token}

    def release(self):
        self.lock.release()  # raises NotAcquired when not ours
        return {"granted": True}


def start(request):
    version = redis_lock.__version__
    return Adapter(request), {"library": f"python-redis-lock {version}", "key": "lock:" + request["key"]}


serve(start)
