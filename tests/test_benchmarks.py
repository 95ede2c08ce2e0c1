"""Every benchmark script runs at tiny size and writes its results file."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_bench_values_writes_timings_and_ratios(tmp_path):
    out = tmp_path / "values.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_values.py"), "--sizes", "100,400", "--dense-max-experiences", "10", "--repeats", "1", "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
    )
    result = json.loads(out.read_text())
    first, second = result["rows"]
    assert (first["records"], first["experiences"]) == (100, 10)
    assert first["dense_over_low_rank"] == first["dense_s"] / first["low_rank_s"]
    assert second["dense_s"] is None
    assert out.with_suffix(".md").read_text().startswith("| records | experiences |")
