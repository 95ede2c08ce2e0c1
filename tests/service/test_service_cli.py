"""``memtrial serve``'s checks before it starts: the port check binds as the server does."""

import contextlib
import socket

import pytest


@contextlib.contextmanager
def taken_port():
    """A port a live listener holds: a ``serve`` that got past its checks ends at the port check, never serving."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield str(taken.getsockname()[1])


def test_a_port_left_in_time_wait_is_free_and_a_live_listener_still_fails_fast():
    from service.cli import port_problem

    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn's listening socket
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    peer = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    assert port_problem("127.0.0.1", port) is not None  # a live process listens: refused at once
    accepted.close()  # the server side closes first: its end of the connection waits in TIME-WAIT
    peer.close()
    listener.close()
    plain = socket.socket()
    with pytest.raises(OSError):  # the port is in TIME-WAIT: a bind without SO_REUSEADDR still fails
        plain.bind(("127.0.0.1", port))
    plain.close()
    assert port_problem("127.0.0.1", port) is None


@pytest.mark.parametrize(
    "variable,raw,message",
    [
        ("MEMTRIAL_DATABASE_URL", "notaurl", "is not a database URL"),
        ("MEMTRIAL_DATABASE_URL", "sqlite://", "must name a SQLite file: an in-memory database"),
        ("MEMTRIAL_DATABASE_URL", "sqlite:////no/such/folder/x.db", "a folder that does not exist, /no/such/folder"),
        ("MEMTRIAL_DATABASE_URL", "mysql://u:secret@host/db", "got 'mysql' (mysql://u:***@host/db)"),
        ("MEMTRIAL_REDIS_URL", "redis://127.0.0.1:notaport/0", "has a port that is not a number"),
        ("MEMTRIAL_RATE_LIMIT_FILE", "/no/such/folder/limits", "must be in a folder that exists"),
        ("MEMTRIAL_PRELOAD_MODEL", "True", "must be 0, 1, true or false, got 'True'"),  # it said "0 or 1"
        ("MEMTRIAL_MAX_BODY_BYTES", "1_000", "must be an integer, got '1_000'"),  # int() took it
        ("MEMTRIAL_CACHE_MB", "2_56", "must be a number, got '2_56'"),  # float() took it
        ("MEMTRIAL_RATE_LIMIT_PER_MINUTE", " 500 ", "must be an integer, got ' 500 '"),
        ("MEMTRIAL_DASK_SCHEDULER", "tcp://scheduler:99999", "must be a scheduler's address"),  # a port past 65535
        ("MEMTRIAL_MAX_BODY_BYTES", "0", "must be a finite number >= 1, got 0"),  # it refused every body
        ("MEMTRIAL_LLM_TIMEOUT_SECONDS", "0", "must be a finite number >= 1, got 0"),  # it gave calls no limit
    ],
)
def test_a_setting_the_service_cannot_run_on_stops_the_start_in_one_line_naming_it(monkeypatch, variable, raw, message):
    """A database URL, a Redis port or a rate-limit file the service cannot use crashed with a traceback once the
    server had started (or, for the URL, when it first migrated); a password in a URL is never shown."""
    from service.settings import Settings

    monkeypatch.setenv(variable, raw)
    with pytest.raises(ValueError) as error:
        Settings.from_env()
    assert str(error.value).startswith(variable) and message in str(error.value) and "secret" not in str(error.value)


@pytest.mark.parametrize(
    "args,environment,said",
    [
        (["serve", "--port", "70000"], {}, "Invalid value for '--port'"),
        (["serve", "--database-url", "notaurl"], {}, "error: MEMTRIAL_DATABASE_URL (--database-url) is not a"),
        (["serve", "--database-url", "postgresql://u:secret@127.0.0.1:1/db"], {}, "error: cannot open or migrate"),
        (["serve"], {"MEMTRIAL_TORCH_THREADS": "abc"}, "error: MEMTRIAL_TORCH_THREADS must be a positive integer"),
        (["serve"], {"MEMTRIAL_TORCH_THREADS": "0"}, "error: MEMTRIAL_TORCH_THREADS must be a positive integer"),
        (["tenants", "create", "x", "--database-url", "notaurl"], {}, "error: MEMTRIAL_DATABASE_URL (--database-url)"),
    ],
)
def test_the_command_line_refuses_what_it_cannot_serve_in_one_line_with_exit_2(
    tmp_path, monkeypatch, args, environment, said
):
    # a torch thread count the model would only read in the background left a server that was never ready
    from typer.testing import CliRunner

    from memtrial.cli.commands import app

    monkeypatch.chdir(tmp_path)  # nothing may be created here either
    monkeypatch.setenv("MEMTRIAL_DATABASE_URL", f"sqlite:///{tmp_path / 'memtrial.db'}")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with taken_port() as port:
        result = CliRunner().invoke(app, [*args, "--port", port] if args == ["serve"] else args)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output and "secret" not in result.output
    assert not list(tmp_path.iterdir())  # refused before any database file was made


def test_the_banner_writes_an_ipv6_host_in_brackets():
    from service.cli import http_address

    assert http_address("::1", 8732) == "http://[::1]:8732" and http_address("0.0.0.0", 80) == "http://0.0.0.0:80"


def test_a_misspelt_setting_is_named_with_the_one_it_is_closest_to(tmp_path, monkeypatch):
    # MEMTRIAL_CAHCE_MB=1024 was ignored without a word: the cache stayed at its default
    from typer.testing import CliRunner

    from memtrial.cli.commands import app
    from service.settings import unknown_variables

    environ = {"MEMTRIAL_CAHCE_MB": "1024", "MEMTRIAL_CACHE_MB": "2", "MEMTRIAL_TORCH_THREADS": "1", "HOME": "/"}
    assert unknown_variables(environ | {"MEMTRIAL_TEST_REDIS_URL": "x", "MEMTRIAL_NOTHING_LIKE_IT": "1"}) == [
        ("MEMTRIAL_CAHCE_MB", "MEMTRIAL_CACHE_MB"),
        ("MEMTRIAL_NOTHING_LIKE_IT", None),
    ]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMTRIAL_DATABASE_URL", f"sqlite:///{tmp_path / 'memtrial.db'}")
    monkeypatch.setenv("MEMTRIAL_CAHCE_MB", "1024")
    with taken_port() as port:  # the start ends at the port check, after the warning
        result = CliRunner().invoke(app, ["serve", "--port", port])
    assert result.exit_code == 2
    assert (
        "warning: MEMTRIAL_CAHCE_MB is not a memtrial setting: ignored (did you mean MEMTRIAL_CACHE_MB?)"
        in result.output
    )


def test_serving_a_missing_sqlite_file_without_migrating_is_refused_and_creates_nothing(tmp_path, monkeypatch):
    # it created an empty file, never migrated: /readyz then said why, but the file stayed behind
    from typer.testing import CliRunner

    from memtrial.cli.commands import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMTRIAL_DATABASE_URL", "sqlite:///./absent.db")
    from live_server import free_port

    result = CliRunner().invoke(app, ["serve", "--no-migrate", "--port", str(free_port())])
    assert result.exit_code == 2 and not (tmp_path / "absent.db").exists()
    assert f"--no-migrate: the SQLite database {tmp_path / 'absent.db'} does not exist" in result.output


@pytest.mark.slow  # a live server on PostgreSQL
def test_the_start_line_names_the_database_without_a_password_given_in_its_query():
    # the line showed everything after the URL's '@', a '?password=' included
    from live_server import Server
    from support import POSTGRES_URL, migrated_postgres

    server = Server(f"{migrated_postgres(POSTGRES_URL)}?password=hunter2xyz", migrate=False)
    output = server.stop()
    assert "memtrial service on http://127.0.0.1:" in output and "hunter2xyz" not in output
