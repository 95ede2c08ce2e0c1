"""The service's embeddings: the core's offline all-MiniLM-L6-v2 encoder, run by ONNX Runtime where it is
installed (2.2x faster for one query on one thread, equal to within 2.4e-7 in cosine; see
``benchmarks/bench_embedding.py``) and by torch otherwise (``MEMTRIAL_EMBEDDER``)."""

from memtrial.drafting.embeddings import DIMENSION, Embedder, OnnxEmbedder, configure_offline
from memtrial.drafting.embeddings import get_embedder as core_embedder

__all__ = ["DIMENSION", "Embedder", "OnnxEmbedder", "get_embedder"]


def get_embedder(backend: str = "auto") -> Embedder:
    """The embedder a service worker uses (``auto``: ONNX Runtime where installed, else torch), loaded
    offline and without progress bars (:func:`~memtrial.drafting.embeddings.configure_offline`)."""
    configure_offline()
    return core_embedder(backend)
