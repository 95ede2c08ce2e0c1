"""``memtrial serve``'s checks before it starts: the port check binds as the server does."""

import pytest


def test_a_port_left_in_time_wait_is_free_and_a_live_listener_still_fails_fast():
    import socket

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
