"""Install size and time of the base package and of ``[all]``, each into a new virtual environment.

For every target the script creates an empty venv, times ``pip install <repo>[extra]`` (a regular,
non-editable install from this checkout), measures the venv's size on disk, the time to
``import memtrial`` in a fresh interpreter, and runs a smoke check: the base install plans, decides
and settles with the engine and its ``memtrial`` command names the extra it lacks; ``[all]`` runs
``memtrial --help`` and imports the service app.

    python benchmarks/bench_install.py --out benchmarks/results/install.json
    python benchmarks/bench_install.py --targets base --out /tmp/install.json

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
EXTRAS = {"base": "", "all": "[all]"}

BASE_SMOKE = """
import sys
from memtrial.demo import run_demo
result = run_demo(36, 0.5, 0, "anytime")
assert result.engine.verify().ok
heavy = [m for m in ("scipy", "pandas", "jax", "torch", "fastapi", "typer") if m in sys.modules]
assert not heavy, heavy
try:
    import memtrial.bayes
except ImportError as error:
    print(error)
"""

ALL_SMOKE = """
import service.app, backtest.runner, memtrial.bayes
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
        _run([str(python), "-c", "import memtrial, memtrial.engine"], check=True, cwd=workdir, env=env)
        imports.append(time.perf_counter() - started)
    smoke = _run([str(python), "-c", BASE_SMOKE if target == "base" else ALL_SMOKE], cwd=workdir, env=env)
    if smoke.returncode != 0:
        raise SystemExit(f"smoke check of {target} failed:\n{smoke.stderr[-3000:]}")
    command = _run([str(venv / "bin" / "memtrial"), "--help"], cwd=workdir, env=env)
    packages = _run([str(python), "-m", "pip", "list", "--format=json"], check=True).stdout
    return {
        "install_s": round(install_s, 1),
        "size_mb": round(size_mb, 1),
        "packages": len(json.loads(packages)),
        "import_memtrial_s_median": round(sorted(imports)[len(imports) // 2], 3),
        "memtrial_command_exit_code": command.returncode,
        "memtrial_command_says": (command.stderr or command.stdout).strip().splitlines()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", default="base,all", help="comma-separated: base, all")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "install.json")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(EXTRAS))
    if unknown:
        parser.error(f"--targets: unknown {unknown}; choose from {sorted(EXTRAS)}")
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory(prefix="memtrial-install-") as folder:
        for target in targets:
            results[target] = measure(target, Path(folder))
            print(target, json.dumps(results[target]), flush=True)
    document = {
        "benchmark": "install",
        "command": "python benchmarks/bench_install.py --out " + str(args.out),
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "results": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    lines = [
        "# Install size and time",
        "",
        f"`{document['command']}` (Python {document['python']}, {document['machine']})",
        "",
        "| target | install (s) | size (MB) | packages | `import memtrial` (s) | `memtrial` says |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for target, row in results.items():
        assert isinstance(row, dict)
        lines.append(
            f"| {target} | {row['install_s']} | {row['size_mb']} | {row['packages']} | {row['import_memtrial_s_median']} | {row['memtrial_command_says']} |"
        )
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
