"""The service's embeddings: the core's offline all-MiniLM-L6-v2 encoder."""

from memtrial.embeddings import DIMENSION, Embedder, get_embedder

__all__ = ["DIMENSION", "Embedder", "get_embedder"]
