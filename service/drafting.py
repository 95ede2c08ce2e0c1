"""Server-side drafting through litellm: one prompt per designed subset, issued concurrently.

Each draft must come back as JSON ``{"weights": {ASSET: number, ...}}`` over
the agent's universe: unknown assets, negative or non-finite weights and an
all-zero answer are malformed; a malformed answer is retried, then reported
(never guessed). Valid weights are normalised to sum to 1.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from service.errors import ApiError

__all__ = ["DraftRequest", "draft_all", "parse_weights", "render_prompt"]

SYSTEM_PROMPT = (
    "You are a portfolio allocation assistant. Answer with one JSON object of the form "
    '{"weights": {"ASSET": weight, ...}} using only the listed assets, non-negative weights summing to 1.'
)


@dataclass(frozen=True, slots=True)
class DraftRequest:
    context: str
    universe: Sequence[tuple[str, str]]
    mandate: str
    experiences: Sequence[str]


def render_prompt(request: DraftRequest) -> str:
    assets = "\n".join(f"- {asset} ({asset_class})" for asset, asset_class in request.universe)
    if request.experiences:
        lessons = "\n".join(f"{i + 1}. {text}" for i, text in enumerate(request.experiences))
    else:
        lessons = "(none: decide from the context alone)"
    return (
        f"Decision context:\n{request.context}\n\nAssets:\n{assets}\n\nMandate: {request.mandate}\n\n"
        f"Lessons from past decisions:\n{lessons}\n\nReturn the JSON object only."
    )


def parse_weights(content: str, assets: Sequence[str]) -> dict[str, float]:
    """Validated, normalised weights from a model answer; ValueError says what is wrong."""
    match = re.search(r"\{.*\}", content, re.DOTALL)
    if match is None:
        raise ValueError("no JSON object in the answer")
    data = json.loads(match.group(0))
    weights = data.get("weights", data) if isinstance(data, dict) else None
    if not isinstance(weights, dict):
        raise ValueError("the JSON object has no weights mapping")
    unknown = sorted(set(weights) - set(assets))
    if unknown:
        raise ValueError(f"unknown assets {unknown}")
    values: dict[str, float] = {}
    for asset, raw in weights.items():
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw) or raw < 0:
            raise ValueError(f"weight of {asset!r} must be a finite number >= 0, got {raw!r}")
        values[asset] = float(raw)
    total = sum(values.values())
    if total <= 0:
        raise ValueError("weights sum to zero")
    return {asset: values.get(asset, 0.0) / total for asset in assets}


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
        except (ValueError, json.JSONDecodeError) as error:
            problems.append(str(error))
    raise ApiError(502, "malformed_draft", f"the drafter's answers were malformed: {problems}", "drafter")


async def draft_all(settings: dict[str, Any], requests: Sequence[DraftRequest], timeout: float) -> list[dict[str, float]]:
    """All drafts of one decision, concurrently, in the order of ``requests``."""
    assets = [asset for asset, _ in requests[0].universe]
    # every draft runs to its end (cancelling litellm mid-call leaves its coroutines dangling)
    answers = await asyncio.gather(*(_one(settings, render_prompt(r), assets, timeout) for r in requests), return_exceptions=True)
    for answer in answers:
        if isinstance(answer, ApiError):
            raise answer
        if isinstance(answer, BaseException):  # litellm raises many provider-specific types
            raise ApiError(502, "drafter_unavailable", f"the drafter failed: {type(answer).__name__}: {answer}", "drafter")
    return [answer for answer in answers if isinstance(answer, dict)]
