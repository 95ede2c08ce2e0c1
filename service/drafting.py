"""Server-side drafting through litellm: one prompt per designed subset, issued concurrently.

The endpoint and its key are the operator's (:mod:`service.providers`); the
agent only names a provider and a model. Prompts and validation are the
core's: portfolio weights by :mod:`memtrial.drafting.drafts`, scored drafts
(forecasts, numbers, answers) by :mod:`memtrial.drafting.answers`. A malformed answer
is retried (at most the drafter's ``max_retries`` times, and only while the
decision's :class:`Retries` last: the server's limit of calls per decision and
a draft budget's credit bound them), then reported as 502 (never guessed). A failed call is reported
by kind (timeout, no connection, the provider's HTTP status); the provider's
error text is never echoed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import Counter, Histogram

from memtrial.drafting.drafts import DraftError, DraftRequest, parse_weights, render_prompt
from memtrial.errors import import_extra
from service.errors import ApiError
from service.providers import Provider
from service.tracing import span

#: every model call server drafting sends, by provider and how it ended: ``ok`` (a usable draft),
#: ``malformed`` (retried while retries last), ``failed`` (no usable answer: a timeout, an unreachable
#: provider, an HTTP error, an answer without a message), ``cancelled`` (the server stopping); what an
#: operator watches the spend bound (calls <= budget x decisions) and outages with
DRAFT_CALLS = Counter(
    "memtrial_draft_calls_total", "Model calls sent by server drafting, by how they ended", ["provider", "outcome"]
)
DRAFT_SECONDS = Histogram("memtrial_draft_seconds", "Seconds one model call of server drafting took", ["provider"])

__all__ = ["DraftRequest", "Retries", "draft_all", "parse_weights", "render_prompt"]

logger = logging.getLogger("memtrial.service")


@dataclass(slots=True)
class Retries:
    """The retries of malformed answers one decision may still send, shared by all its drafts.

    left: how many remain; bound: what set them, in words for the error a draft fails with when none is
    left; used: how many were sent.
    """

    left: int
    bound: str
    used: int = 0

    def take(self) -> bool:
        """Whether one more retry may be sent (and count it)."""
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def _failure_kind(error: BaseException) -> str:
    """What went wrong, in words that reveal nothing of the upstream's answer.

    litellm reports a refused connection as an HTTP 500 whose message says
    "Connection error", so the causes and the message are read (never echoed).
    """
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    names = " ".join(type(e).__name__.lower() for e in chain)
    text = str(error).lower()
    if "timeout" in names or "timed out" in text or any(isinstance(e, TimeoutError) for e in chain):
        return "the provider did not answer in time"
    if "connect" in names or "connection error" in text:
        return "the provider could not be reached"
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return f"the provider answered HTTP {status}"
    return "the provider's call failed"


def _called(provider: Provider, model: str, attempt: int, outcome: str, start: float) -> None:
    """One draft call counted in /metrics by its outcome, and logged at DEBUG (never its prompt or answer)."""
    DRAFT_CALLS.labels(provider.name, outcome).inc()
    elapsed = round(1000 * (time.perf_counter() - start), 2)
    extra = {"provider": provider.name, "model": model, "attempt": attempt, "outcome": outcome, "ms": elapsed}
    logger.debug("draft call", extra=extra)


async def load_litellm() -> Any:
    """litellm, imported in a worker thread the first time: its import takes seconds of CPU, which on the event
    loop would hold up every request of this worker (health checks, other agents' calls) until it ends."""
    import sys

    litellm: Any = sys.modules.get("litellm")
    if litellm is None or getattr(litellm.__spec__, "_initializing", False):  # absent, or half-imported by another
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        litellm = await asyncio.to_thread(import_extra, "litellm", "llm", "LLM drafting")
    # its hints after a failed call ("Give Feedback / Get Help", in colour) are plain lines on stdout, where the
    # service writes JSON records only
    litellm.suppress_debug_info = True
    return litellm


async def _one(
    provider: Provider,
    settings: dict[str, Any],
    system: str,
    prompt: str,
    parse: Callable[[str], Any],
    timeout: float,
    retries: Retries,
) -> Any:
    litellm = await load_litellm()

    attempts = int(settings.get("max_retries", 2)) + 1
    why = ""  # what was wrong with the last answer, said with the refusal
    model = str(settings["model"])
    for attempt in range(attempts):
        if attempt and not retries.take():
            raise ApiError(
                502,
                "malformed_draft",
                f"the drafter's answers were malformed {attempt} times in a row (model {settings['model']!r}){why}; "
                f"no retry was left: {retries.bound}",
                "drafter",
            )
        start = time.perf_counter()
        with span("llm.completion", model=model, provider=provider.name, attempt=attempt):
            try:
                with DRAFT_SECONDS.labels(provider.name).time():
                    response = await litellm.acompletion(
                        model=settings["model"],
                        api_base=provider.api_base,
                        api_key=provider.api_key() or "none",
                        temperature=settings.get("temperature", 0.7),
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}],
                        timeout=timeout,
                        num_retries=0,
                    )
            except asyncio.CancelledError:  # the server stopping, not the provider failing
                _called(provider, model, attempt, "cancelled", start)
                raise
            except BaseException:
                _called(provider, model, attempt, "failed", start)
                raise
        try:
            answer = parse(response.choices[0].message.content or "")
        except DraftError as error:
            _called(provider, model, attempt, "malformed", start)
            why = f"; the last: {str(error)[:300]}"
            continue
        except Exception:  # an answer without a message (a content filter's empty choices), say
            _called(provider, model, attempt, "failed", start)
            raise
        _called(provider, model, attempt, "ok", start)
        return answer
    raise ApiError(
        502,
        "malformed_draft",
        f"the drafter's answers were malformed {attempts} times in a row (model {settings['model']!r}){why}",
        "drafter",
    )


async def draft_all(
    provider: Provider,
    settings: dict[str, Any],
    system: str,
    prompts: Sequence[str],
    parse: Callable[[str], Any],
    timeout: float,
    retries: Retries,
) -> list[Any]:
    """All drafts of one decision, concurrently, in the order of ``prompts``: each reply checked by ``parse``
    (a malformed one retried while ``retries`` last)."""
    why = provider.refusal(str(settings["model"]))
    if why is not None:  # the operator's file changed since the agent chose its model
        raise ApiError(
            422,
            "invalid",
            f"drafting: the agent's model {settings['model']!r} {why}; update the agent's drafter",
            "drafting",
        )
    # every draft runs to its end (cancelling litellm mid-call leaves its coroutines dangling)
    answers = await asyncio.gather(
        *(_one(provider, settings, system, prompt, parse, timeout, retries) for prompt in prompts),
        return_exceptions=True,
    )
    for answer in answers:
        if isinstance(answer, ApiError):
            raise answer
        if isinstance(answer, BaseException):  # litellm raises many provider-specific types
            raise ApiError(
                502,
                "drafter_unavailable",
                f"the drafter failed: {_failure_kind(answer)} (provider {provider.name!r})",
                "drafter",
            )
    return list(answers)
