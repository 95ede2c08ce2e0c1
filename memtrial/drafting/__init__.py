"""Drafting: prompts and answers for the drafts an LLM writes, retrieval of experiences, and sentence embeddings.

Modules: :mod:`~memtrial.drafting.drafts`, :mod:`~memtrial.drafting.answers`, :mod:`~memtrial.drafting.retrieval`, :mod:`~memtrial.drafting.embeddings`.
"""

from memtrial.drafting.answers import (
    ANSWER_SYSTEM_PROMPT,
    AnswerKind,
    AnswerSpec,
    parse_answer,
    render_answer_prompt,
)
from memtrial.drafting.drafts import (
    CLASS_BUDGET,
    SYSTEM_PROMPT,
    AnalogicalDrafter,
    Drafter,
    DraftError,
    DraftRequest,
    Lesson,
    mandate_text,
    parse_weights,
    quote,
    render_prompt,
    reply_json,
    typical_allocation,
    weights_schema,
)
from memtrial.drafting.embeddings import (
    DIMENSION,
    MAX_CHARACTERS,
    Embedder,
    OnnxEmbedder,
    configure_offline,
    default_onnx_cache,
    get_embedder,
)
from memtrial.drafting.retrieval import (
    cosine_similarities,
    top_k,
)

__all__ = [
    "ANSWER_SYSTEM_PROMPT",
    "AnalogicalDrafter",
    "AnswerKind",
    "AnswerSpec",
    "CLASS_BUDGET",
    "DIMENSION",
    "DraftError",
    "DraftRequest",
    "Drafter",
    "Embedder",
    "Lesson",
    "MAX_CHARACTERS",
    "OnnxEmbedder",
    "SYSTEM_PROMPT",
    "configure_offline",
    "cosine_similarities",
    "default_onnx_cache",
    "get_embedder",
    "mandate_text",
    "parse_answer",
    "parse_weights",
    "quote",
    "render_answer_prompt",
    "render_prompt",
    "reply_json",
    "top_k",
    "typical_allocation",
    "weights_schema",
]
