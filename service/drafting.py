"""Server-side drafting through litellm: one prompt per designed subset, issued concurrently.

Prompt and validation are the core's (:mod:`memtrial.drafting`): a malformed
answer is retried, then reported as 502 (never guessed).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any

from memtrial.drafting import SYSTEM_PROMPT, DraftError, DraftRequest, parse_weights, render_prompt
from service.errors import ApiError

__all__ = ["DraftRequest", "draft_all", "parse_weights", "render_prompt"]


async def _one(settings: dict[str, Any], prompt: str, assets: Sequence[str], timeout: float) -> dict[str, float]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    problems: list[str] = []
    for _ in range(int(settings.get("max_retries", 2)) + 1):
        response = await litellm.acompletion(
            model=settings["model"],
            api_base=settings.get("api_base"),
            api_key=settings.get("api_key") or "none",
            temperature=settings.get("temperature", 0.7),
            messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
            timeout=timeout,
            num_retries=0,
        )
        content = response.choices[0].message.content or ""
        try:
            return parse_weights(content, assets)
        except DraftError as error:
            problems.append(str(error))
    raise ApiError(502, "malformed_draft", f"the drafter's answers were malformed: {problems}", "drafter")


async def draft_all(settings: dict[str, Any], requests: Sequence[DraftRequest], timeout: float) -> list[dict[str, float]]:
    """All drafts of one decision, concurrently, in the order of ``requests``."""
    assets = list(requests[0].assets)
    # every draft runs to its end (cancelling litellm mid-call leaves its coroutines dangling)
    answers = await asyncio.gather(*(_one(settings, render_prompt(r), assets, timeout) for r in requests), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, ApiError):
            raise answer
        if isinstance(answer, BaseException):  # litellm raises many provider-specific types
            raise ApiError(502, "drafter_unavailable", f"the drafter failed: {type(answer).__name__}: {answer}", "drafter")
    return [answer for answer in answers if isinstance(answer, dict)]
