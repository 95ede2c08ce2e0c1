"""Service: the server's guards against slow clients. A stalled head or body is dropped; a slow, steady upload is served."""

import pytest
from support import wait_until


@pytest.fixture
def live_guarded(tmp_path, monkeypatch):
    """A real uvicorn server with the service's protocol and a 1 s head deadline and body pause."""
    import socket
    import threading

    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from service.limits import BodyLimitMiddleware
    from service.server import GuardedH11Protocol

    monkeypatch.setenv("MEMTRIAL_HEADER_TIMEOUT_SECONDS", "1")

    async def echo(request):
        return JSONResponse({"bytes": len(await request.body())})

    app = BodyLimitMiddleware(
        Starlette(routes=[Route("/echo", echo, methods=["POST"])]), limit=10_000, body_timeout=1.0
    )
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, http=GuardedH11Protocol, log_level="error", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started, 10, "the guarded server's start")
    yield port
    server.should_exit = True
    thread.join(5)


def _read_until_closed(sock, limit):
    import time as clock

    sock.settimeout(0.2)
    deadline, data = clock.monotonic() + limit, b""
    while clock.monotonic() < deadline:
        try:
            chunk = sock.recv(4096)
        except TimeoutError:
            continue
        if not chunk:
            return data, True
        data += chunk
    return data, False


# slow tier: real-time deadlines of 1 s against a client paced in wall time, and a wall-time assertion
@pytest.mark.slow
def test_a_head_sent_a_byte_a_second_is_dropped(live_guarded):
    import socket
    import time as clock

    sock = socket.create_connection(("127.0.0.1", live_guarded))
    start = clock.monotonic()
    closed = False
    for byte in b"POST /echo HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaa":  # paced by the reads below: a stalling client
        try:
            sock.send(bytes([byte]))
        except OSError:
            closed = True
            break
        _, closed = _read_until_closed(sock, 0.25)
        if closed:
            break
    sock.close()
    assert closed and clock.monotonic() - start < 5


# slow tier: real-time deadlines of 1 s against a client paced in wall time
@pytest.mark.slow
def test_a_body_that_stalls_answers_408_and_a_slow_steady_one_is_served(live_guarded):
    import socket
    import time as clock

    stalled = socket.create_connection(("127.0.0.1", live_guarded))
    stalled.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nx")
    data, closed = _read_until_closed(stalled, 5)
    stalled.close()
    assert b" 408 " in data.split(b"\r\n")[0] and closed
    steady = socket.create_connection(("127.0.0.1", live_guarded))
    steady.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 80\r\n\r\n")
    for _ in range(10):  # 2.5 s in all, longer than the pause allowed, never silent for long
        clock.sleep(0.25)  # the pacing is the thing under test: a slow, steady client (0.75 s within the pause)
        steady.sendall(b"x" * 8)
    data, _ = _read_until_closed(steady, 3)
    steady.close()
    assert b" 200 " in data.split(b"\r\n")[0] and b'{"bytes":80}' in data
