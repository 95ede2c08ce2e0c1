"""How fast ``memtrial serve`` starts, and what an idle worker holds in memory.

Each run starts ``memtrial serve`` on a new SQLite file and a free port and polls every 10 ms for the
first TCP connection, the first 200 from ``/healthz`` and the first 200 from ``/readyz`` (the embedding
model loads in the background, so readiness comes later than health). Then the server idles for
``--idle`` seconds and the resident memory of its process tree is read. One more run with
``MEMTRIAL_PRELOAD_MODEL=0`` gives the idle memory before the model is loaded, one more with an empty
ONNX cache (``MEMTRIAL_ONNX_CACHE``) times a first start, which exports the model before it loads it,
and a second ``serve`` on the busy port measures how soon it fails and whether it printed its banner
first.

Readiness depends on how busy the machine is: the results record the embedder, whether the ONNX
cache held the model, the core count and the 1-minute load average before and after the runs (a load
near or above the core count: a busy machine, where the model loads several times slower).

    python benchmarks/bench_start.py --out benchmarks/results/start.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from live_server import free_port  # noqa: E402


def _serve(database: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "memtrial.cli",
        "serve",
        "--database-url",
        f"sqlite:///{database}",
        "--port",
        str(port),
    ]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def _connects(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.05)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _status(port: int, path: str) -> int | None:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=1).status_code
    except httpx.HTTPError:
        return None


def _tree_rss_mb(pid: int) -> float:
    process = psutil.Process(pid)
    return (
        process.memory_info().rss + sum(child.memory_info().rss for child in process.children(recursive=True))
    ) / 2**20


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def start_once(
    folder: Path, index: int, idle: float, preload: bool, extra: dict[str, str] | None = None
) -> dict[str, float | None]:
    port = free_port()
    env = {**os.environ, "MEMTRIAL_PRELOAD_MODEL": "1" if preload else "0", **(extra or {})}
    started = time.perf_counter()
    process = _serve(folder / f"start-{index}.db", port, env)
    marks: dict[str, float | None] = {"port_s": None, "healthz_s": None, "readyz_s": None}
    deadline = started + 180
    try:
        while time.perf_counter() < deadline and (marks["readyz_s"] is None if preload else marks["healthz_s"] is None):
            if process.poll() is not None:
                raise SystemExit(f"memtrial serve exited: {process.stdout.read().decode() if process.stdout else ''}")
            now = time.perf_counter() - started
            if marks["port_s"] is None and _connects(port):
                marks["port_s"] = now
            if marks["port_s"] is not None and marks["healthz_s"] is None and _status(port, "/healthz") == 200:
                marks["healthz_s"] = time.perf_counter() - started
            if marks["healthz_s"] is not None and preload and _status(port, "/readyz") == 200:
                marks["readyz_s"] = time.perf_counter() - started
            time.sleep(0.01)
        time.sleep(idle)
        marks["idle_rss_mb"] = _tree_rss_mb(process.pid)
        if index == 0 and preload:
            marks.update(_busy_port(folder, port))
    finally:
        _stop(process)
    return marks


def _busy_port(folder: Path, port: int) -> dict[str, float | None]:
    started = time.perf_counter()
    second = _serve(folder / "second.db", port, dict(os.environ))
    output = second.communicate(timeout=60)[0].decode()
    return {
        "busy_port_exit_s": time.perf_counter() - started,
        "busy_port_exit_code": float(second.returncode),
        "busy_port_banner_printed": float("memtrial service on" in output),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds the server idles before its memory is read")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "start.json")
    args = parser.parse_args()
    from memtrial.drafting.embeddings import OnnxEmbedder, configure_offline

    configure_offline()

    onnx_cached = OnnxEmbedder().exported_path().is_file()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="memtrial-start-") as folder:
        runs = [start_once(Path(folder), i, args.idle, preload=True) for i in range(args.runs)]
        lazy = start_once(Path(folder), args.runs, args.idle, preload=False)
        empty_cache = {"MEMTRIAL_ONNX_CACHE": str(Path(folder) / "onnx")}
        first = start_once(Path(folder), args.runs + 1, args.idle, preload=True, extra=empty_cache)
    load_after = os.getloadavg()[0]

    def median(key: str) -> float:
        return statistics.median(float(run[key]) for run in runs if run[key] is not None)  # type: ignore[arg-type]

    summary = {
        "port_open_s_median": round(median("port_s"), 3),
        "healthz_s_median": round(median("healthz_s"), 3),
        "readyz_s_median": round(median("readyz_s"), 3),
        "readyz_s_first_start_exporting_onnx": round(float(first["readyz_s"] or 0.0), 3),
        "idle_rss_mb_model_loaded_median": round(median("idle_rss_mb"), 1),
        "idle_rss_mb_before_model_load": round(float(lazy["idle_rss_mb"] or 0.0), 1),
        "busy_port_exit_s": round(float(runs[0]["busy_port_exit_s"] or 0.0), 3),
        "busy_port_exit_code": int(runs[0]["busy_port_exit_code"] or 0),
        "busy_port_banner_printed": bool(runs[0]["busy_port_banner_printed"]),
    }
    document = {
        "benchmark": "start",
        "command": f"python benchmarks/bench_start.py --runs {args.runs} --idle {args.idle:g}",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "conditions": {
            "embedder": os.environ.get("MEMTRIAL_EMBEDDER", "auto"),
            "onnx_model_cached": onnx_cached,
            "cores": os.cpu_count(),
            "load_average_1m_before": round(load_before, 2),
            "load_average_1m_after": round(load_after, 2),
        },
        "summary": summary,
        "runs": runs,
        "run_without_preload": lazy,
        "run_with_empty_onnx_cache": first,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        "# Server start",
        "",
        f"`{document['command']}` ({document['machine']}; medians of {args.runs} starts, one worker, SQLite)",
        "",
        "Conditions: " + ", ".join(f"{key} {value}" for key, value in document["conditions"].items()),
        "",
        "| figure | value |",
        "|---|---:|",
    ]
    lines += [f"| {key} | {value} |" for key, value in summary.items()]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
