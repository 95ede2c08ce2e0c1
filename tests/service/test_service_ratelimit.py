"""Service: rate limits. A bounded, evicting table shared by the servers on one database, an honest ``Retry-After``, the real source."""

import pytest


def test_a_full_rate_table_evicts_instead_of_letting_new_keys_through():
    from service.ratelimit import SharedRateLimiter

    limiter = SharedRateLimiter(slots=64)
    now = 1_000_000.0
    for i in range(5_000):  # a flood of distinct keys fills every slot
        limiter.hit(f"flood-{i}", 20, now)
    verdicts = [limiter.hit("newcomer", 20, now + 1).allowed for _ in range(60)]
    assert verdicts.count(True) == 20 and not verdicts[-1]  # counted and limited like any key


@pytest.mark.parametrize("into", [0.0, 12.5, 47.0, 59.9])
@pytest.mark.parametrize("previous_hits", [0, 7, 20])
def test_waiting_retry_after_is_enough(into, previous_hits):
    from service.ratelimit import SharedRateLimiter

    limiter = SharedRateLimiter(slots=64)
    base = 60.0 * 20_000
    for _ in range(previous_hits):
        limiter.hit("k", 20, base - 60 + 30)
    now = base + into
    while limiter.hit("k", 20, now).allowed:
        pass
    verdict = limiter.hit("k", 20, now)
    assert not verdict.allowed and verdict.retry_after >= 1
    assert limiter.hit("k", 20, now + verdict.retry_after).allowed  # a client that waits as told is served
    assert verdict.retry_after <= 121


def test_forwarded_for_is_believed_only_from_a_trusted_proxy():
    from starlette.requests import Request

    from service.deps import client_address
    from service.ratelimit import TrustedProxies

    def request(peer, forwarded):
        headers = [(b"x-forwarded-for", forwarded.encode())] if forwarded else []
        return Request({"type": "http", "client": (peer, 5000), "headers": headers, "method": "GET", "path": "/"})

    nobody, proxy = TrustedProxies(""), TrustedProxies("10.0.0.0/8, ::1")
    assert client_address(request("127.0.0.1", "1.2.3.4"), nobody) == "127.0.0.1"
    assert client_address(request("10.1.2.3", "1.2.3.4"), proxy) == "1.2.3.4"
    assert (
        client_address(request("10.1.2.3", "6.6.6.6, 1.2.3.4, 10.9.9.9"), proxy) == "1.2.3.4"
    )  # the last untrusted hop
    assert client_address(request("192.0.2.1", "1.2.3.4"), proxy) == "192.0.2.1"
    with pytest.raises(ValueError, match="MEMTRIAL_TRUSTED_PROXIES"):
        TrustedProxies("10.0.0.0/8, not-an-address")


@pytest.fixture
def strict_http(database_url):
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.settings import Settings

    with TestClient(create_app(Settings(database_url=database_url, auth_failures_per_minute=5))) as http:
        yield http


def test_rotating_forwarded_for_does_not_dodge_the_wrong_key_limit_and_a_right_key_from_a_blocked_source_is_refused(
    strict_http, database_url
):
    from support import make_tenant

    key = make_tenant(database_url, "victim")
    codes = [
        strict_http.get(
            "/v1/agents", headers={"Authorization": "Bearer wrong", "X-Forwarded-For": f"203.0.113.{i}"}
        ).status_code
        for i in range(8)
    ]
    assert codes[:5] == [401] * 5 and set(codes[5:]) == {429}
    blocked = strict_http.get("/v1/agents", headers={"Authorization": f"Bearer {key}"})
    assert blocked.status_code == 429 and "Retry-After" in blocked.headers  # a right guess looks like a wrong one
    assert blocked.json()["error"]["code"] == "rate_limited"


@pytest.mark.slow
def test_servers_on_one_database_share_one_rate_limit_table_and_restart_at_once_after_a_kill(tmp_path):
    import os
    import signal

    from live_server import Server

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    url = f"sqlite:///{tmp_path / 'memtrial.db'}"
    env = {"TMPDIR": str(scratch), "MEMTRIAL_PRELOAD_MODEL": "0", "MEMTRIAL_RATE_LIMIT_FILE": ""}
    server = Server(url, env=env, ready_path="/healthz")
    tables = sorted(scratch.glob("memtrial-*/rate-limits-*"))
    assert len(tables) == 1 and tables[0].parent.stat().st_mode & 0o777 == 0o700
    server.stop()  # SIGTERM: the table stays for the replicas on this database, one file per database
    other = Server(f"sqlite:///{tmp_path / 'other.db'}", env=env, ready_path="/healthz")
    other.stop()
    assert len(sorted(scratch.glob("memtrial-*/rate-limits-*"))) == 2
    crashed = Server(url, env=env, ready_path="/healthz")
    assert len(sorted(scratch.glob("memtrial-*/rate-limits-*"))) == 2  # the same database: the same table
    import httpx

    for _ in range(20):  # connections the crash leaves behind
        httpx.get(f"{crashed.url}/healthz")
    os.kill(crashed.process.pid, signal.SIGKILL)
    crashed.process.wait()
    crashed.stop()
    again = Server(
        url, port=crashed.port, env=env, ready_path="/healthz", timeout=30
    )  # serves on the same port at once
    again.stop()


def test_the_request_log_names_the_client_a_trusted_proxy_forwards_for(tmp_path, caplog):
    # MEMTRIAL_TRUSTED_PROXIES names the client "for rate limits and logs": the logs had no client at all
    from fastapi.testclient import TestClient

    from service.app import create_app
    from service.migrations import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path / 'proxied.db'}"
    upgrade(url)
    caplog.set_level("INFO", logger="memtrial.service")
    app = create_app(Settings(database_url=url, trusted_proxies="10.0.0.0/8"))
    with TestClient(app, client=("10.1.2.3", 5000)) as proxied, TestClient(app, client=("192.0.2.7", 5000)) as direct:
        proxied.get("/healthz", headers={"X-Request-ID": "via-proxy", "X-Forwarded-For": "1.1.1.1"})
        direct.get("/healthz", headers={"X-Request-ID": "direct", "X-Forwarded-For": "6.6.6.6"})
    clients = {
        r.request_id: r.client for r in caplog.records if getattr(r, "request_id", None) in ("via-proxy", "direct")
    }
    assert clients == {"via-proxy": "1.1.1.1", "direct": "192.0.2.7"}  # an untrusted peer's header is not believed


def test_replicas_share_one_counter_however_their_database_url_is_spelt(tmp_path, monkeypatch):
    from service.cli import shared_rate_limit_file

    alike = [
        "postgresql://postgres@127.0.0.1:5432/fleet",
        "postgresql://postgres@localhost/fleet",
        "postgresql+psycopg://other:secret@LOCALHOST:5432/fleet?sslmode=disable",
        "postgresql://postgres@[::1]/fleet",
    ]
    assert len({shared_rate_limit_file(url) for url in alike}) == 1
    others = [
        "postgresql://postgres@127.0.0.1:5433/fleet",
        "postgresql://postgres@127.0.0.1/other",
        "postgresql://db.example/fleet",
    ]
    assert len({shared_rate_limit_file(url) for url in [alike[0], *others]}) == 4
    users = {shared_rate_limit_file(f"postgresql://{user}@localhost") for user in ("alice", "bob")}
    assert len(users) == 2  # no database named: each user's own, PostgreSQL's default
    several = "postgresql://postgres@/fleet?host=db1.example&host=db2.example"  # several hosts: not this machine's
    assert shared_rate_limit_file(several) != shared_rate_limit_file(alike[0])
    sockets = ["postgresql://postgres@/fleet?host=/run/PG", "postgresql://postgres@/fleet?host=/run/pg"]
    assert len({shared_rate_limit_file(url) for url in sockets}) == 2  # a folder's name keeps its case
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here").mkdir()
    assert shared_rate_limit_file("sqlite:///memtrial.db") == shared_rate_limit_file(
        f"sqlite:///{tmp_path}/memtrial.db"
    )
    assert shared_rate_limit_file("sqlite:///here/../memtrial.db") == shared_rate_limit_file("sqlite:///memtrial.db")


def test_the_rate_limit_file_is_only_ever_in_a_folder_of_this_users_alone_and_never_a_link(tmp_path, monkeypatch):
    # the folder's name is known to every user of the machine: one another user made first (open to all, or a
    # link) let that user aim the counters at any file of the service's user, which the server then wrote into
    import os
    import tempfile

    from service.cli import shared_rate_limit_file
    from service.ratelimit import SharedRateLimiter

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    folder = tmp_path / f"memtrial-{os.getuid()}"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    with pytest.raises(ValueError, match=r"is not this user's alone \(owner uid \d+, mode 0o777\)"):
        shared_rate_limit_file("sqlite:////tmp/x.db")
    folder.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    folder.symlink_to(elsewhere)
    with pytest.raises(ValueError, match=r"is not this user's alone \(a link\)"):
        shared_rate_limit_file("sqlite:////tmp/x.db")
    folder.unlink()
    path = shared_rate_limit_file("sqlite:////tmp/x.db")  # made now, this user's alone: taken
    assert os.path.dirname(path) == str(folder) and (folder.stat().st_mode & 0o777) == 0o700
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    os.symlink(victim, path)
    with pytest.raises(ValueError, match="MEMTRIAL_RATE_LIMIT_FILE must not be a symbolic link"):
        SharedRateLimiter(path)
    assert victim.read_text() == "precious"
