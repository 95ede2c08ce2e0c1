"""The server's log: one JSON object per line, whatever writes it (the service, a library, uvicorn,
Python's warnings), and no progress bars."""

import json
import subprocess
import sys

import pytest

EMIT = """
import logging, warnings
from service.logs import configure_logging
configure_logging("INFO")
logging.getLogger("memtrial.service").info("from the service")
logging.getLogger("opentelemetry.exporter.otlp.proto.http.trace_exporter").warning("Transient error, retrying")
logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
warnings.warn("a library's warning")
"""


def _records(output: str) -> list[dict[str, object]]:
    records = []
    for line in output.splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"a log line that is not JSON: {line[:300]!r}") from None
    return records


def test_configure_logging_writes_every_librarys_records_and_warnings_as_json():
    result = subprocess.run([sys.executable, "-c", EMIT], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout == ""
    records = _records(result.stderr)
    assert [(r["logger"], r["level"]) for r in records] == [
        ("memtrial.service", "info"),
        ("opentelemetry.exporter.otlp.proto.http.trace_exporter", "warning"),
        ("uvicorn.error", "warning"),
        ("py.warnings", "warning"),
    ]
    assert "a library's warning" in str(records[-1]["message"])


DASK = """
import logging
import distributed  # imported first: its loggers (and tornado's) set up with plain handlers of their own
from service.logs import configure_logging
from service.jobs import DaskEngine
configure_logging("INFO")
engine = DaskEngine(None)
engine.client()  # a local cluster starts: Dask's own logger said so in plain text, from INFO
logging.getLogger("distributed.client").warning("a warning of Dask's")
logging.getLogger("tornado.application").warning("a warning of tornado's")
engine.close()
"""


@pytest.mark.slow  # a local Dask cluster starts and stops
def test_dask_logs_as_every_library_once_a_refit_cluster_starts():
    pytest.importorskip("distributed", reason="the service extra is not installed")
    result = subprocess.run([sys.executable, "-c", DASK], capture_output=True, text=True, timeout=120, check=True)
    records = _records(result.stderr)  # every line JSON
    dask = [(r["logger"], r["level"]) for r in records if str(r["logger"]).startswith("distributed")]
    assert ("distributed.client", "warning") in dask and all(level != "info" for _, level in dask)
    assert ("tornado.application", "warning") in [(r["logger"], r["level"]) for r in records]


@pytest.mark.slow  # a live server exporting and loading the embedding model
def test_server_log_has_no_progress_bar_when_the_model_is_exported_and_loaded(tmp_path):
    from live_server import Server

    # an empty ONNX cache: the server exports the model from its weights (through transformers), then loads it
    env = {"MEMTRIAL_EMBEDDER": "auto", "MEMTRIAL_ONNX_CACHE": str(tmp_path / "onnx")}
    server = Server(f"sqlite:///{tmp_path / 'quiet.db'}", env=env)  # ready: the model has loaded
    output = server.stop()
    assert list((tmp_path / "onnx").glob("*.onnx")), "the model was not exported: nothing was tested"
    assert "Loading weights" not in output and "it/s]" not in output, output[-2000:]
    assert _records(output)  # and every line is JSON


def test_debug_logs_time_each_refit_job_from_sent_to_finished(migrated_sqlite, tmp_path, caplog):
    """A refit job's DEBUG records: sent (on a thread here), then finished with its time (this job's row is gone
    before it runs, which ends it at once)."""
    import logging

    from support import copy_sqlite, wait_until

    from service.db import make_engine, make_session_factory
    from service.jobs import RefitRunner

    engine = make_engine(copy_sqlite(migrated_sqlite, tmp_path / "refit.db"))
    runner = RefitRunner(make_session_factory(engine), capacity=1)
    try:
        with caplog.at_level(logging.DEBUG, logger="memtrial.service"):
            assert runner.reserve()
            runner.submit("job-that-is-gone")
            wait_until(lambda: any(r.getMessage() == "refit job finished" for r in caplog.records), 30, "the job")
    finally:
        runner.engine.close()
        engine.dispose()
    sent, finished = (
        next(r for r in caplog.records if r.getMessage() == m) for m in ("refit job sent", "refit job finished")
    )
    assert (sent.job_id, sent.runs_on) == ("job-that-is-gone", "a thread")
    assert finished.job_id == "job-that-is-gone" and finished.ms >= 0
