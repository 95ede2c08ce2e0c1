"""API keys: generated once, stored as SHA-256 hashes, checked in constant time by lookup."""

from __future__ import annotations

import hashlib
import secrets

__all__ = ["KEY_PREFIX", "hash_key", "new_key"]

KEY_PREFIX = "mt_"


def new_key() -> str:
    """A fresh random API key (256 bits of entropy)."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    """SHA-256 of the key; a random 256-bit key needs no slow password hash."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()
