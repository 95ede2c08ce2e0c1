"""The prompts of one decision's drafts, one per designed subset, and the check of a model's reply.

Shared by server drafting (:mod:`service.usecases.deciding`) and the MCP server's drafting tools
(:mod:`service.mcp`), so a draft asked of the operator's model and one asked of an MCP host's model
read the same. Each prompt holds the decision's context and exactly one subset's lessons: portfolio
agents get :func:`memtrial.drafting.drafts.render_prompt` (weights over the universe under the mandate),
scored agents :func:`memtrial.drafting.answers.render_answer_prompt` (the answer they declare).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memtrial.drafting.answers import ANSWER_SYSTEM_PROMPT, AnswerSpec, parse_answer, render_answer_prompt
from memtrial.drafting.drafts import SYSTEM_PROMPT, DraftRequest, Lesson, mandate_text, parse_weights, render_prompt
from memtrial.outcomes.mandates import INVESTORS
from memtrial.records import DecisionKind

__all__ = ["DraftPrompts", "draft_prompts"]

DraftPrompts = tuple[str, list[str], Callable[[str], Any]]


def draft_prompts(settings: Mapping[str, Any], context: str, subsets: Sequence[Sequence[str]]) -> DraftPrompts:
    """The system prompt, one user prompt per subset (its lessons' texts) and the check of a reply.

    settings: the agent's (``kind``, ``outcomes``, ``answer``; ``universe`` and ``investor`` for portfolios).
    """
    if settings.get("kind", DecisionKind.PORTFOLIO) == DecisionKind.SCORED:
        spec = AnswerSpec.of_agent(settings.get("outcomes"), settings.get("answer"))
        prompts = [render_answer_prompt(context, tuple(Lesson(t) for t in texts), spec) for texts in subsets]
        return ANSWER_SYSTEM_PROMPT, prompts, functools.partial(parse_answer, spec=spec)
    universe = [(dict(a)["asset"], dict(a)["asset_class"]) for a in settings["universe"]]
    mandate = mandate_text(INVESTORS[str(settings["investor"])])
    assets, classes = tuple(a for a, _ in universe), tuple(c for _, c in universe)
    prompts = [
        render_prompt(DraftRequest(context, assets, classes, mandate, tuple(Lesson(t) for t in texts), sample=i))
        for i, texts in enumerate(subsets)
    ]
    return SYSTEM_PROMPT, prompts, functools.partial(parse_weights, assets=list(assets))
