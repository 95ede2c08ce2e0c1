"""Rate limits in Redis (``MEMTRIAL_REDIS_URL``): two app instances, standing for replicas on two
machines (each with a table of its own), share every limit through the real Redis at 127.0.0.1:6379;
an unreachable Redis leaves every request served and counted on the machine, and says so."""

import logging
import os
import uuid

import numpy as np
import pytest
from fastapi.testclient import TestClient
from live_server import free_port
from support import make_tenant
from tcp_proxy import TcpProxy

from service.app import create_app
from service.migrations import upgrade
from service.ratelimit import SharedRateLimiter
from service.settings import Settings

REDIS_URL = os.environ.get("MEMTRIAL_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def redis_prefix():
    """A key prefix of this test's own in the real Redis, its keys deleted afterwards."""
    import redis

    connection = redis.Redis.from_url(REDIS_URL)
    try:
        connection.ping()
    except redis.exceptions.RedisError as error:  # the suite must run against Redis: fail loudly, never skip
        pytest.fail(
            f"Redis at {REDIS_URL} is not reachable ({type(error).__name__}); start it or set MEMTRIAL_TEST_REDIS_URL"
        )
    prefix = f"memtrial-test:{uuid.uuid4().hex}:"
    yield prefix
    for key in connection.scan_iter(match=f"{prefix}*"):
        connection.delete(key)
    connection.close()


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def service_log():
    records = Records()
    logger = logging.getLogger("memtrial.service")
    logger.addHandler(records)
    yield records.messages
    logger.removeHandler(records)


def _replicas(tmp_path, **settings):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    upgrade(url)
    apps = [create_app(Settings(database_url=url, **settings)) for _ in range(2)]  # a table each: two machines
    return url, apps


@pytest.mark.slow  # the real Redis
def test_redis_limits_are_shared_by_replicas_with_their_own_tables(tmp_path, redis_prefix):
    url, apps = _replicas(
        tmp_path, redis_url=REDIS_URL, redis_prefix=redis_prefix, rate_limit_per_minute=6, auth_failures_per_minute=3
    )
    key, other_key = make_tenant(url, "limited"), make_tenant(url, "other")
    with TestClient(apps[0]) as first, TestClient(apps[1]) as second:
        replicas = [first, second]
        statuses = [replicas[i % 2].get("/v1/agents", headers={"Authorization": f"Bearer {key}"}) for i in range(8)]
        assert [r.status_code for r in statuses] == [200] * 6 + [429] * 2  # 3 on each: one count of 6
        assert 1 <= int(statuses[-1].headers["Retry-After"]) <= 121
        wrong = [replicas[i % 2].get("/v1/agents", headers={"Authorization": "Bearer mt_wrong"}) for i in range(4)]
        assert [r.status_code for r in wrong] == [401] * 3 + [429]
        # the source is over its wrong-key limit on both replicas: a right key from it looks like a wrong one
        blocked = first.get("/v1/agents", headers={"Authorization": f"Bearer {other_key}"})
        assert blocked.status_code == 429
        assert (
            blocked.json()["error"]["message"]
            == "too many requests with a missing or invalid API key from this address"
        )


@pytest.mark.slow  # the real Redis
def test_redis_limiter_decides_and_says_retry_after_exactly_like_the_local_table(redis_prefix):
    from service.ratelimit_redis import RedisRateLimiter

    local = SharedRateLimiter(slots=64)
    limiter = RedisRateLimiter(REDIS_URL, redis_prefix, SharedRateLimiter(slots=64))
    rng = np.random.default_rng(7)
    moment = 60.0 * 30_000 + 41.0
    for _ in range(400):  # requests across six minutes, some only checked (the wrong-key check)
        moment += float(rng.exponential(0.9))
        key = f"key-{rng.integers(3)}"
        if rng.random() < 0.2:
            assert limiter.check(key, 9, moment) == local.check(key, 9, moment), moment
        else:
            assert limiter.hit(key, 9, moment) == local.hit(key, 9, moment), moment
    limiter.close()


def test_redis_unreachable_serves_every_request_counts_locally_and_says_so_once(tmp_path, service_log, monkeypatch):
    import service.ratelimit_redis as ratelimit_redis

    monkeypatch.setattr(ratelimit_redis, "RETRY_SECONDS", 0.0)  # every request asks the closed port again
    closed = f"redis://127.0.0.1:{free_port()}/0"
    url, apps = _replicas(tmp_path, redis_url=closed, rate_limit_per_minute=4)
    key = make_tenant(url, "limited")
    before = ratelimit_redis.FALLBACKS._value.get()
    with TestClient(apps[0]) as http:
        statuses = [http.get("/v1/agents", headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(6)]
        metrics = http.get("/metrics").text
    assert statuses == [200] * 4 + [429] * 2  # served, and still limited: on this machine alone
    # two decisions a request: the source's wrong-key count checked, the key's counted
    assert ratelimit_redis.FALLBACKS._value.get() - before == 12
    shown = next(line for line in metrics.splitlines() if line.startswith("memtrial_rate_limit_fallbacks_total "))
    assert float(shown.split()[1]) >= 12
    warnings = [m for m in service_log if "Redis does not answer" in m]
    assert warnings == ["Redis does not answer: rate limits are counted on this machine alone until it does"]


@pytest.mark.slow  # the real Redis
def test_a_redis_that_refuses_the_commands_is_named_a_setting_to_fix_not_an_outage(tmp_path, service_log, redis_prefix):
    # a database number Redis does not have: it answers, with an error, on every request; this was logged as
    # "Redis does not answer", which an operator waits out instead of fixing
    url, apps = _replicas(tmp_path, redis_url=REDIS_URL.rsplit("/", 1)[0] + "/99", rate_limit_per_minute=4)
    key = make_tenant(url, "limited")
    with TestClient(apps[0]) as http:
        statuses = [http.get("/v1/agents", headers={"Authorization": f"Bearer {key}"}).status_code for _ in range(5)]
    assert statuses == [200] * 4 + [429]  # served, limited on this machine alone
    refusals = [m for m in service_log if m.startswith("Redis refuses the rate limits' commands")]
    assert len(refusals) == 1 and "MEMTRIAL_REDIS_URL" in refusals[0]
    assert not [m for m in service_log if "Redis does not answer" in m]


@pytest.mark.slow  # the real Redis
def test_redis_back_after_an_outage_counts_in_redis_again_and_says_so(redis_prefix, service_log, monkeypatch):
    import service.ratelimit_redis as ratelimit_redis
    from service.ratelimit_redis import RedisRateLimiter

    monkeypatch.setattr(ratelimit_redis, "RETRY_SECONDS", 0.0)
    host, port = REDIS_URL.split("//")[1].split("/")[0].split(":")
    proxy = TcpProxy(host, int(port))
    through = f"redis://127.0.0.1:{proxy.port}/0"
    limiter = RedisRateLimiter(through, redis_prefix, SharedRateLimiter(slots=64))
    other = RedisRateLimiter(REDIS_URL, redis_prefix, SharedRateLimiter(slots=64))  # another machine's view
    moment = 60.0 * 40_000 + 5.0
    try:
        assert limiter.hit("k", 10, moment).allowed
        proxy.cut()
        assert all(limiter.hit("k", 10, moment).allowed for _ in range(3))  # counted locally
        proxy.restore()
        assert limiter.hit("k", 10, moment).allowed  # in Redis again: 2 there now
        verdicts = [other.hit("k", 10, moment).allowed for _ in range(9)]
        assert verdicts == [True] * 8 + [False]
    finally:
        limiter.close()
        other.close()
        proxy.close()
    assert [m for m in service_log if "Redis" in m] == [
        "Redis does not answer: rate limits are counted on this machine alone until it does",
        "Redis answers again: rate limits are counted in Redis",
    ]


def test_a_redis_url_of_another_scheme_is_refused_naming_the_variable():
    with pytest.raises(ValueError) as refused:
        Settings(redis_url="http://127.0.0.1:6379")
    assert str(refused.value) == (
        "MEMTRIAL_REDIS_URL must start with redis://, rediss:// or unix://, got 'http://127.0.0.1:6379'"
    )
