"""LiteLLMDrafter over the real HTTP path, against a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from fake_llm import FakeLLM

from backtest.llm import LiteLLMDrafter, cache_key
from memtrial.drafting.drafts import DraftError, DraftRequest, Lesson, parse_weights, render_prompt
from memtrial.errors import import_extra

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

ASSETS = ("HON", "JNJ", "MSFT", "UVV", "CASH")
CLASSES = ("equities", "equities", "equities", "equities", "cash")
MODEL = "openai/fake-model"


def requests(date: int = 0, n: int = 8) -> list[DraftRequest]:
    lessons = tuple(Lesson(f"lesson {i}") for i in range(4))
    return [
        DraftRequest(
            "a quiet day",
            ASSETS,
            CLASSES,
            "balanced",
            tuple(lessons[j] for j in range(4) if mask >> j & 1),
            date=date,
            sample=mask,
        )
        for mask in range(n)
    ]


def test_drafts_come_over_http_validated_and_accounted(tmp_path: Path) -> None:
    with FakeLLM() as fake, LiteLLMDrafter(MODEL, api_base=fake.api_base, cache=tmp_path / "c.sqlite") as drafter:
        batch = requests()
        drafts = drafter.draft(batch)
        expected = [parse_weights(fake.answer(render_prompt(r), 0), ASSETS) for r in batch]
        assert np.array_equal(drafts, np.array([[e[a] for a in ASSETS] for e in expected]))
        assert fake.calls == 8
        assert fake.requests[0]["model"] == "fake-model"
        assert drafter.usage.calls == 8 and drafter.usage.prompt_tokens == 80 and drafter.usage.completion_tokens == 80
        assert drafter.usage.cache_hits == 0 and drafter.usage.retries == 0


# slow tier: each answer takes 2.5 s of wall time, and the test compares measured durations
@pytest.mark.slow
def test_the_eight_calls_of_a_date_overlap_in_time() -> None:
    # each answer takes 2.5 s, far longer than litellm needs to send the others, even on a loaded machine
    with FakeLLM(delay=2.5) as fake, LiteLLMDrafter(MODEL, api_base=fake.api_base) as drafter:
        drafter.draft(requests(date=99, n=1))  # litellm sets its HTTP client up on the first call
        fake.max_in_flight, drafter.call_spans = 0, []
        started = time.perf_counter()
        drafter.draft(requests())
        wall = time.perf_counter() - started
    spans = drafter.call_spans
    assert len(spans) == 8
    # measured on both sides: the server saw all eight at once, and every client span overlaps every other
    assert fake.max_in_flight == 8
    latest_start, earliest_end = max(s for s, _ in spans), min(e for _, e in spans)
    assert latest_start < earliest_end
    # so the date's drafting took far less than the sum of its calls
    assert drafter.usage.draft_wall_seconds < 0.5 * drafter.usage.call_seconds
    print(f"8 calls of 2.5 s each: wall {wall:.2f} s, server saw {fake.max_in_flight} in flight")


def test_malformed_answers_are_retried_then_reported(tmp_path: Path) -> None:
    with (
        FakeLLM(malformed=True) as fake,
        LiteLLMDrafter(MODEL, api_base=fake.api_base, max_retries=2, cache=tmp_path / "c.sqlite") as drafter,
    ):
        with pytest.raises(DraftError, match=r"date 4 sample 0: no usable answer after 3 tries: \['no JSON object"):
            drafter.draft(requests(date=4, n=1))
        assert fake.calls == 3 and drafter.usage.malformed == 3 and drafter.usage.retries == 2
        assert drafter.cache is not None and len(drafter.cache) == 0


def test_partial_json_is_malformed_not_guessed() -> None:
    with FakeLLM(partial=True) as fake, LiteLLMDrafter(MODEL, api_base=fake.api_base, max_retries=1) as drafter:
        with pytest.raises(DraftError, match="no JSON object"):
            drafter.draft(requests(n=1))
        assert fake.calls == 2


def test_a_malformed_answer_then_a_valid_one_succeeds_with_one_retry() -> None:
    with FakeLLM(flaky=True) as fake, LiteLLMDrafter(MODEL, api_base=fake.api_base, max_retries=1) as drafter:
        drafts = drafter.draft(requests(n=1))
        assert drafts.shape == (1, 5) and fake.calls == 2
        assert drafter.usage.retries == 1 and drafter.usage.malformed == 1


# slow tier: a wall-time assertion (the timeouts end the calls well before the 3 s answers would)
@pytest.mark.slow
def test_timeouts_are_retried_then_reported() -> None:
    with (
        FakeLLM(delay=3.0) as fake,
        LiteLLMDrafter(MODEL, api_base=fake.api_base, max_retries=1, timeout=0.5) as drafter,
    ):
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import_extra("litellm", "llm", "LLM drafting")  # its import (seconds) is not what the bound measures
        started = time.perf_counter()
        with pytest.raises(DraftError, match="(?i)timeout"):
            drafter.draft(requests(n=1))
        assert time.perf_counter() - started < 2.9
        assert drafter.usage.failed_calls == 2
        assert fake.calls >= 1


def test_the_cache_replays_a_run_bit_for_bit_without_any_server(tmp_path: Path) -> None:
    cache = tmp_path / "drafts.sqlite"
    with FakeLLM() as fake, LiteLLMDrafter(MODEL, api_base=fake.api_base, cache=cache) as drafter:
        first = np.vstack([drafter.draft(requests(date=d)) for d in range(3)])
        port = fake.api_base
    with LiteLLMDrafter(MODEL, api_base=port, cache=cache, offline=True) as replay:
        again = np.vstack([replay.draft(requests(date=d)) for d in range(3)])
        assert replay.usage.calls == 0 and replay.usage.cache_hits == 24
    assert first.tobytes() == again.tobytes()
    with (
        LiteLLMDrafter(MODEL, cache=cache, offline=True) as replay,
        pytest.raises(DraftError, match="date 0 sample 8: no cached answer"),
    ):
        replay.draft(requests(n=9))
    with (
        LiteLLMDrafter("openai/another-model", cache=cache, offline=True) as other,
        pytest.raises(DraftError, match="no cached answer"),
    ):
        other.draft(requests(n=1))


def test_an_interrupted_run_resumes_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "drafts.sqlite"
    with FakeLLM() as fake:
        with LiteLLMDrafter(MODEL, api_base=fake.api_base, cache=cache) as drafter:
            drafter.draft(requests(n=5))
        assert fake.calls == 5
        with LiteLLMDrafter(MODEL, api_base=fake.api_base, cache=cache) as resumed:
            resumed.draft(requests(n=8))
        assert fake.calls == 8 and resumed.usage.cache_hits == 5 and resumed.usage.calls == 3


def test_cache_key_separates_model_prompt_and_sample() -> None:
    keys = {cache_key("m", "p", 0), cache_key("m", "p", 1), cache_key("m", "q", 0), cache_key("n", "p", 0)}
    assert len(keys) == 4


def test_offline_needs_a_cache() -> None:
    with pytest.raises(DraftError, match="offline replay needs a cache"):
        LiteLLMDrafter(MODEL, offline=True)
