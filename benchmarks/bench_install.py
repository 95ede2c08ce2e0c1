"""Install size and time of the base package, of ``[service]`` and of ``[all]``, each into a new virtual environment.

For every target the script creates an empty venv, times ``pip install <repo>[extra]`` (a regular,
non-editable install from this checkout), measures the venv's size on disk, the time to
``import memtrial`` in a fresh interpreter, and runs a smoke check: the base install plans, decides
and settles with the engine and its ``memtrial`` command names the extra it lacks; ``[all]`` runs
``memtrial --help`` and imports the service app; ``[service]`` imports the service app and runs
``memtrial serve --help``.

    python benchmarks/bench_install.py --out benchmarks/results/install.json
    python benchmarks/bench_install.py --targets service --out benchmarks/results/install.json
    python benchmarks/bench_install.py --targets base --out /tmp/install.json

Targets not measured in this run keep their earlier results in ``--out``; each target's row records
the command that measured it, when, and the machine's load average as its install began (the machine
is busy when that is near or above its core count).

Wheels come from whatever index pip is configured with (on the reference machine a local mirror,
so the times are install times, not download times).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = {"base": "", "service": "[service]", "all": "[all]"}

BASE_SMOKE = """
import sys
from memtrial.cli.demo import run_demo
result = run_demo(36, 0.5, 0, "anytime")
assert result.engine.verify().ok
heavy = [m for m in ("scipy", "pandas", "jax", "torch", "fastapi", "typer") if m in sys.modules]
assert not heavy, heavy
try:
    import memtrial.values.bayes
except ImportError as error:
    print(error)
"""

SERVICE_SMOKE = """
import service.app
print("the service imports")
"""

ALL_SMOKE = """
import service.app, backtest.runner, memtrial.values.bayes
print("service, backtest and bayes import")
"""


def _size_mb(folder: Path) -> float:
    total = 0
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            total += path.stat().st_size
    return total / 2**20


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload,no-any-return]


def measure(target: str, workdir: Path) -> dict[str, object]:
    venv = workdir / f"venv-{target}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    empty_mb = _size_mb(venv)
    load = os.getloadavg()[0]
    python = venv / "bin" / "python"
    started = time.perf_counter()
    install = _run([str(python), "-m", "pip", "install", "--quiet", f"{ROOT}{EXTRAS[target]}"])
    install_s = time.perf_counter() - started
    if install.returncode != 0:
        raise SystemExit(f"pip install for {target} failed:\n{install.stderr[-3000:]}")
    size_mb = _size_mb(venv) - empty_mb
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    imports = []
    for _ in range(5):
        started = time.perf_counter()
        _run([str(python), "-c", "import memtrial, memtrial.engine.lifecycle"], check=True, cwd=workdir, env=env)
        imports.append(time.perf_counter() - started)
    smoke_code = {"base": BASE_SMOKE, "service": SERVICE_SMOKE, "all": ALL_SMOKE}[target]
    smoke = _run([str(python), "-c", smoke_code], cwd=workdir, env=env)
    if smoke.returncode != 0:
        raise SystemExit(f"smoke check of {target} failed:\n{smoke.stderr[-3000:]}")
    command = _run([str(venv / "bin" / "memtrial"), "--help"], cwd=workdir, env=env)
    packages = _run([str(python), "-m", "pip", "list", "--format=json"], check=True).stdout
    if target == "service":
        serve = _run([str(venv / "bin" / "memtrial"), "serve", "--help"], cwd=workdir, env=env)
        if serve.returncode != 0:
            raise SystemExit(f"memtrial serve --help failed after installing [service]:\n{serve.stderr[-3000:]}")
    return {
        "install_s": round(install_s, 1),
        "size_mb": round(size_mb, 1),
        "packages": len(json.loads(packages)),
        "import_memtrial_s_median": round(sorted(imports)[len(imports) // 2], 3),
        "memtrial_command_exit_code": command.returncode,
        "memtrial_command_says": (command.stderr or command.stdout).strip().splitlines()[0],
        "load_average_1m": round(load, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="base,service,all", help="comma-separated: base, service, all")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "install.json")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(EXTRAS))
    if unknown:
        parser.error(f"--targets: unknown {unknown}; choose from {sorted(EXTRAS)}")
    earlier = json.loads(args.out.read_text()) if args.out.is_file() else {}
    command = f"python benchmarks/bench_install.py --targets {','.join(targets)} --out {args.out}"
    results: dict[str, object] = {
        target: {"command": earlier.get("command"), **row} for target, row in earlier.get("results", {}).items()
    }
    with tempfile.TemporaryDirectory(prefix="memtrial-install-") as folder:
        for target in targets:
            row = measure(target, Path(folder))
            results[target] = {"command": command, "measured": time.strftime("%Y-%m-%d", time.gmtime()), **row}
            print(target, json.dumps(results[target]), flush=True)
    results = {target: results[target] for target in EXTRAS if target in results}
    document = {
        "benchmark": "install",
        "command": command,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        "# Install size and time",
        "",
        f"Python {document['python']}, {document['machine']}; each row's command measured it (load average: the"
        " machine's 1-minute load as its install began, where recorded)",
        "",
        "| target | install (s) | size (MB) | packages | `import memtrial` (s) | `memtrial` says | load average | command |",
        "|---|---:|---:|---:|---:|---|---:|---|",
    ]
    for target, row in results.items():
        assert isinstance(row, dict)
        lines.append(
            f"| {target} | {row['install_s']} | {row['size_mb']} | {row['packages']} | {row['import_memtrial_s_median']}"
            f" | {row['memtrial_command_says']} | {row.get('load_average_1m', 'not recorded')} | `{row['command']}` |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
