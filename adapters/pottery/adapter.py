"""pottery's `Redlock` through locklab's soak protocol, on as many masters as the
scenario has (3 or 5).

One `Redlock` per client, `auto_release_time` = the ttl; `acquire(blocking=True,
timeout=ttl)`: the library's own loop of tries, a random 0-0.2 s apart, for at most a
ttl. Each try sets the key on every master in parallel and returns as soon as a
majority said yes while `ttl - elapsed - (ttl * 0.01 + 2 ms)` is positive, without
waiting for the other masters; a failed try releases every master. The value is a new
uuid4 per try (`_uuid`, reported so that the harness knows whose key it sees).
The masters are `redis.Redis.from_url(url)` clients with socket timeouts set to the
soak's command timeout (made so, redis-py does not retry on a connection error).
"""

import os
import sys
from importlib.metadata import version

import redis
from pottery import Redlock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from lockproto import serve  # noqa: E402


class Adapter:
    def __init__(self, request):
        timeout = request["timeout_ms"] / 1000
        masters = {
            redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
            for url in request["urls"]
        }
        self.ttl = request["ttl_ms"] / 1000
        self.lock = Redlock(key=request["key"], masters=masters, auto_release_time=self.ttl)

    def acquire(self, token):
        if not self.lock.acquire(blocking=True, timeout=self.ttl):
            return {"granted": False}
        return {"granted": True, "token": self.lock._uuid}

    def release(self):
        self.lock.release()  # raises ReleaseUnlockedLock without a majority
        return {"granted": True}


def start(request):
    return Adapter(request), {"library": f"pottery {version('pottery')}", "key": "redlock:" + request["key"]}


serve(start)
