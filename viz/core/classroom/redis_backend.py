"""The store's primitive operations on Redis (see ``backends`` for what each must do).

Values are strings, hashes are hashes and registries are sorted sets scored by the time a member
lapses; every key is prefixed ``kvlab:``. The capped writes are Lua scripts, which Redis runs
atomically, so two app processes on two machines cannot both take the last place.
"""

from __future__ import annotations

import time

from .backends import StoreDown

PREFIX = "kvlab:"
HASH_PUT = """
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""
REGISTER = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == false and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
"""


def _ms(ttl_s: float) -> int:
    return max(1, int(ttl_s * 1000))


class RedisBackend:
    """A Redis server at ``url`` (redis://host:port/db). Connections come from redis-py's pool,
    shared by the sessions of one process; every command gives up after ``timeout_s``."""

    def __init__(self, url: str, timeout_s: float = 2.0):
        import redis  # only where a Redis store is configured

        self._errors = (redis.exceptions.RedisError, OSError)
        try:
            self.client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                               decode_responses=True)
        except (ValueError, *self._errors) as err:
            raise StoreDown(f"the class store address is not usable ({err})") from None
        self._hash_put = self.client.register_script(HASH_PUT)
        self._register = self.client.register_script(REGISTER)

    def _call(self, command, *args, **kwargs):
        try:
            return command(*args, **kwargs)
        except self._errors as err:
            raise StoreDown(f"the class store (Redis) did not answer ({type(err).__name__})") from None

    def get(self, key: str) -> str | None:
        return self._call(self.client.get, PREFIX + key)

    def put(self, key: str, value: str, ttl_s: float, only_new: bool = False) -> bool:
        return bool(self._call(self.client.set, PREFIX + key, value, px=_ms(ttl_s), nx=only_new))

    def delete(self, key: str) -> None:
        self._call(self.client.delete, PREFIX + key)

    def renew(self, keys: list[str], ttl_s: float) -> None:
        def work():
            pipe = self.client.pipeline(transaction=False)
            for key in keys:
                pipe.pexpire(PREFIX + key, _ms(ttl_s))
            pipe.execute()
        self._call(work)

    def incr(self, key: str, ttl_s: float) -> int:
        def work():
            pipe = self.client.pipeline(transaction=True)
            pipe.incr(PREFIX + key)
            pipe.pexpire(PREFIX + key, _ms(ttl_s), nx=True)  # the first write starts its lifetime
            return pipe.execute()[0]
        return int(self._call(work))

    def hash_put(self, key: str, field: str, value: str, ttl_s: float, cap: int) -> bool:
        return bool(self._call(self._hash_put, keys=[PREFIX + key], args=[field, value, _ms(ttl_s), cap]))

    def hash_all(self, key: str) -> dict[str, str]:
        return self._call(self.client.hgetall, PREFIX + key)

    def register(self, key: str, member: str, until: float, cap: int) -> bool:
        return bool(self._call(self._register, keys=[PREFIX + key], args=[member, until, time.time(), cap]))

    def unregister(self, key: str, member: str) -> None:
        self._call(self.client.zrem, PREFIX + key, member)

    def ping(self) -> None:
        self._call(self.client.ping)
