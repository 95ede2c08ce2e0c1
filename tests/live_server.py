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
    """``memtrial serve`` on ``port`` (a free one by default); ready when ``ready_path`` answers 200."""

    def __init__(
        self,
        database_url: str,
        workers: int = 1,
        *,
        port: int | None = None,
        env: dict[str, str] | None = None,
        ready_path: str = "/readyz",
        migrate: bool = True,
        timeout: float = 120.0,
    ) -> None:
        self.port = port or free_port()
        command = [
            sys.executable,
            "-m",
            "memtrial.cli",
            "serve",
            "--database-url",
            database_url,
            "--port",
            str(self.port),
            "--workers",
            str(workers),
        ]
        if not migrate:
            command.append("--no-migrate")
        # the server's output (stdout and stderr) goes to a file: a pipe nobody drains would block its event
        # loop once full
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                message = self.output()[-2000:]
                self.stop()
                raise RuntimeError(f"server exited: {message}")
            try:
                if httpx.get(f"{self.url}{ready_path}", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"server did not answer {ready_path} within {timeout:g} s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> str:
        """Stop the server; its whole output, up to its last line."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        output = self.output()
        self.log.close()
        return output
