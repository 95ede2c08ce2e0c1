"""Where the full-Bayes learner keeps JAX's compiled kernels (read without importing JAX, so a program can point
JAX at it before JAX loads)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["COMPILE_CACHE_BYTES", "COMPILE_CACHE_MIN_SECONDS", "default_jax_cache"]

#: kernels that compile faster than this are not kept (NumPyro's take seconds; the small ones cost more to read)
COMPILE_CACHE_MIN_SECONDS = 0.5

#: the most the compile cache keeps on disk, the least recently used kernels dropped past it; with a bound JAX also
#: reads and writes each entry under a file lock, so processes sharing the folder never read one half-written
COMPILE_CACHE_BYTES = 512 * 2**20


def default_jax_cache() -> Path:
    """JAX's persistent compile cache: ``MEMTRIAL_JAX_CACHE``, else ``~/.cache/memtrial/jax`` (read, never created
    here; ``Path.home()`` raises RuntimeError where neither HOME nor the user's entry names a home)."""
    return Path(os.environ.get("MEMTRIAL_JAX_CACHE") or Path.home() / ".cache" / "memtrial" / "jax")
