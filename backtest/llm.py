"""LLM drafting through litellm, with a response cache and token and cost accounting.

:class:`LiteLLMDrafter` implements :class:`memtrial.drafting.drafts.Drafter`. The
requests of one call (the drafts of one date) are issued concurrently on the
drafter's own event loop. Each answer is validated against the date's
universe (:func:`memtrial.drafting.drafts.parse_weights`); a malformed answer or a
failed call is retried, then reported as :class:`DraftError` naming the date
and sample, never guessed.

The cache is a SQLite file keyed by ``sha256(model, sha256(prompt), sample)``.
Only valid answers are stored, each as soon as it arrives, so an interrupted
run resumes where it stopped, and a finished run replays bit for bit with no
server at all (``offline=True`` turns a cache miss into an error).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.drafting.drafts import (
    SYSTEM_PROMPT,
    DraftError,
    DraftRequest,
    parse_weights,
    render_prompt,
    weights_schema,
)
from memtrial.errors import InputError, import_extra

__all__ = ["LiteLLMDrafter", "ResponseCache", "Usage", "cache_key"]


def cache_key(model: str, prompt: str, sample: int) -> str:
    prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()
    return hashlib.sha256(f"{model}\n{prompt_hash}\n{sample}".encode()).hexdigest()


@dataclass
class Usage:
    """What a drafter spent: calls made, answers replayed, retries, tokens, cost, time.

    call_seconds sums every call's latency (calls overlap, and a server that
    answers one at a time makes them queue); draft_wall_seconds is the time
    the run spent waiting for drafts, so draft_wall_seconds / calls is the
    cost of one draft.
    """

    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    malformed: int = 0
    clipped: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    call_seconds: float = 0.0
    draft_wall_seconds: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


class ResponseCache:
    """Valid answers by key, in a SQLite file (safe for several worker processes)."""

    def __init__(self, path: Path) -> None:
        """Open (or create) the cache at ``path``; an InputError naming ``cache`` for a file that is none."""
        self.path = path
        self._lock = threading.Lock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._connection = sqlite3.connect(path, timeout=60, check_same_thread=False)
        except (OSError, sqlite3.Error) as error:
            raise InputError(
                f"cache {path} cannot be opened ({type(error).__name__}: {error})", field="cache"
            ) from None
        try:
            with self._lock, self._connection:
                self._connection.execute("PRAGMA journal_mode=WAL")
                self._connection.execute(
                    "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, sample INTEGER NOT NULL,"
                    " content TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost_usd REAL NOT NULL)"
                )
                self._connection.execute("SELECT count(*) FROM responses").fetchone()  # a damaged file fails here
        except sqlite3.Error as error:
            self._connection.close()
            raise InputError(
                f"cache {path} is not a draft cache memtrial can read ({type(error).__name__}: {error}): give another "
                "--cache, or move this file aside (it was left as it is)",
                field="cache",
            ) from None

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._connection.execute("SELECT content FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, model: str, sample: int, content: str, usage: Usage) -> None:
        with self._lock, self._connection:
            self._connection.execute(
                "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, sample, content, usage.prompt_tokens, usage.completion_tokens, usage.cost_usd),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection.execute("SELECT count(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class LiteLLMDrafter:
    """Drafts with any model litellm reaches (``model``, ``api_base``), cached and accounted.

    json_schema: send the answer's JSON schema as ``response_format`` (for
    servers that constrain decoding, such as a local llama.cpp server).
    clip_negative: clip negative weights to 0 rather than reject the answer
    (for weak local models; every clipped answer is counted in ``usage.clipped``).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        cache: Path | None = None,
        offline: bool = False,
        temperature: float = 0.7,
        max_tokens: int | None = 400,
        max_retries: int = 2,
        timeout: float = 60.0,
        concurrency: int = 8,
        json_schema: bool = False,
        clip_negative: bool = False,
    ) -> None:
        if offline and cache is None:
            raise DraftError("offline replay needs a cache", field="cache")
        if concurrency < 1:
            raise DraftError(f"concurrency must be >= 1, got {concurrency}", field="concurrency")
        self.model, self.api_base, self.api_key = model, api_base, api_key
        self.offline, self.temperature, self.max_tokens = offline, temperature, max_tokens
        self.max_retries, self.timeout, self.concurrency, self.json_schema = (
            max_retries,
            timeout,
            concurrency,
            json_schema,
        )
        self.clip_negative = clip_negative
        self.cache = ResponseCache(cache) if cache is not None else None
        self.usage = Usage()
        self.call_spans: list[tuple[float, float]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    # -- the event loop the calls run on --------------------------------
    def _run(self, coroutine: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="litellm-drafter", daemon=True)
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        if self._loop is not None:
            loop = self._loop

            async def _drain() -> None:
                # litellm leaves background tasks (logging) running: let them finish briefly, then cancel them
                pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                if pending:
                    _, still = await asyncio.wait(pending, timeout=1.0)
                    for task in still:
                        task.cancel()
                    await asyncio.gather(*still, return_exceptions=True)
                await loop.shutdown_asyncgens()

            asyncio.run_coroutine_threadsafe(_drain(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join()
            loop.close()
            self._loop = None
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LiteLLMDrafter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- drafting ----------------------------------------------------------
    def draft(self, requests: Sequence[DraftRequest]) -> NDArray[np.float64]:
        if not requests:
            return np.zeros((0, 0))
        answers: list[dict[str, float] | None] = [None] * len(requests)
        missing = []
        for i, request in enumerate(requests):
            prompt = render_prompt(request)
            key = cache_key(self.model, prompt, request.sample)
            cached = self.cache.get(key) if self.cache is not None else None
            if cached is not None:
                answers[i] = parse_weights(cached, request.assets, clip_negative=self.clip_negative)
                self.usage.cache_hits += 1
            elif self.offline:
                raise DraftError(
                    f"date {request.date} sample {request.sample}: no cached answer for model {self.model!r} (offline replay)",
                    field="cache",
                )
            else:
                missing.append((i, request, prompt, key))
        if missing:
            started = time.perf_counter()
            fresh = self._run(self._draft_all([(r, p, k) for _, r, p, k in missing]))
            self.usage.draft_wall_seconds += time.perf_counter() - started
            for (i, *_), weights in zip(missing, fresh, strict=True):
                answers[i] = weights
        return np.array(
            [[a[asset] for asset in r.assets] for a, r in zip(answers, requests, strict=True) if a is not None]
        )

    async def _draft_all(self, items: list[tuple[DraftRequest, str, str]]) -> list[dict[str, float]]:
        gate = asyncio.Semaphore(self.concurrency)
        results = await asyncio.gather(*(self._draft_one(gate, *item) for item in items), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, dict)]

    async def _draft_one(
        self, gate: asyncio.Semaphore, request: DraftRequest, prompt: str, key: str
    ) -> dict[str, float]:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        litellm = import_extra("litellm", "llm", "LLM drafting")

        problems: list[str] = []
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.usage.retries += 1
            options: dict[str, Any] = {}
            if self.json_schema:
                options["response_format"] = {"type": "json_object", "schema": weights_schema(request.assets)}
            if self.max_tokens is not None:
                options["max_tokens"] = self.max_tokens
            async with gate:
                started = time.perf_counter()
                try:
                    response = await litellm.acompletion(
                        model=self.model,
                        api_base=self.api_base,
                        api_key=self.api_key or "none",
                        temperature=self.temperature,
                        messages=[{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
                        timeout=self.timeout,
                        num_retries=0,
                        **options,
                    )
                except Exception as error:  # litellm raises many provider-specific types
                    self.usage.failed_calls += 1
                    problems.append(f"{type(error).__name__}: {str(error)[:200]}")
                    continue
                finally:
                    ended = time.perf_counter()
                    self.call_spans.append((started, ended))
                    self.usage.call_seconds += ended - started
                    self.usage.calls += 1
            spent = _usage_of(response)
            self.usage.prompt_tokens += spent.prompt_tokens
            self.usage.completion_tokens += spent.completion_tokens
            self.usage.cost_usd += spent.cost_usd
            content = response.choices[0].message.content or ""
            notes: list[str] = []
            try:
                weights = parse_weights(content, request.assets, clip_negative=self.clip_negative, notes=notes)
            except DraftError as error:
                self.usage.malformed += 1
                problems.append(str(error))
                continue
            self.usage.clipped += bool(notes)
            if self.cache is not None:
                self.cache.put(key, self.model, request.sample, content, spent)
            return weights
        raise DraftError(
            f"date {request.date} sample {request.sample}: no usable answer after {self.max_retries + 1} tries: {problems}",
            field="draft",
        )


def _usage_of(response: Any) -> Usage:
    usage = getattr(response, "usage", None)
    spent = Usage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )
    hidden = getattr(response, "_hidden_params", {}) or {}
    cost = hidden.get("response_cost")
    spent.cost_usd = float(cost) if isinstance(cost, int | float) else 0.0
    return spent
