"""A real ``memtrial serve`` process on a free 127.0.0.1 port, for end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    def __init__(self, database_url: str, workers: int = 1) -> None:
        self.port = free_port()
        command = [sys.executable, "-m", "memtrial.cli", "serve", "--database-url", database_url, "--port", str(self.port), "--workers", str(workers)]
        # the server's logs go to a file: a pipe nobody drains would block its event loop once full
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=self.log, env=os.environ.copy())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.log.seek(0)
                message = self.log.read().decode()[-2000:]
                self.stop()
                raise RuntimeError(f"server exited: {message}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("server did not become ready within 120 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.log.close()
