"""The LLM providers server drafting may call: the operator's configuration, never a tenant's.

``MEMTRIAL_LLM_CONFIG`` names a JSON file::

    {"providers": {
        "openai": {"models": ["openai/gpt-4o-mini"], "api_key_env": "OPENAI_API_KEY"},
        "local":  {"models": ["openai/local"], "api_base": "http://127.0.0.1:8080/v1", "api_key_file": "/run/secrets/local"}
    }}

A tenant's agent names a provider and one of its models; the endpoint and the
key come from here, read when a draft is made (a key is never stored with an
agent, never returned, never logged). ``"models": ["*"]`` allows any model name
of that provider.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LLMConfigError", "Provider", "Providers", "load_providers"]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_KEYS = {"models", "api_base", "api_key_env", "api_key_file"}


class LLMConfigError(ValueError):
    """The operator's LLM configuration is unusable (the message names the file and the entry)."""


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    models: tuple[str, ...]
    api_base: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None

    def allows(self, model: str) -> bool:
        return "*" in self.models or model in self.models

    def api_key(self) -> str | None:
        """The key, read now from the environment or the secrets file (None: the provider needs none)."""
        if self.api_key_env:
            return os.environ.get(self.api_key_env)
        if self.api_key_file:
            return Path(self.api_key_file).read_text().strip()
        return None

    def public(self) -> dict[str, Any]:
        """What a tenant may see: the name and the models, not the endpoint or the key."""
        return {"provider": self.name, "models": list(self.models)}


@dataclass(frozen=True, slots=True)
class Providers:
    by_name: Mapping[str, Provider]

    def get(self, name: str) -> Provider | None:
        return self.by_name.get(name)

    def __bool__(self) -> bool:
        return bool(self.by_name)


def load_providers(path: str | None) -> Providers:
    """The providers of the configuration file at ``path`` (none when unset)."""
    if not path:
        return Providers({})
    try:
        data = json.loads(Path(path).read_text())
    except OSError as error:
        raise LLMConfigError(f"MEMTRIAL_LLM_CONFIG: cannot read {path}: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise LLMConfigError(f"MEMTRIAL_LLM_CONFIG: {path} is not JSON: {error}") from None
    if not isinstance(data, dict) or not isinstance(data.get("providers"), dict) or set(data) != {"providers"}:
        raise LLMConfigError(f"MEMTRIAL_LLM_CONFIG: {path} must be an object with one key, providers (name -> settings)")
    providers = {}
    for name, entry in data["providers"].items():
        where = f"MEMTRIAL_LLM_CONFIG: {path}: provider {name!r}"
        if not _NAME.match(name):
            raise LLMConfigError(f"{where}: names use letters, digits, '_', '.', '-' (at most 64)")
        if not isinstance(entry, dict) or not set(entry) <= _KEYS:
            raise LLMConfigError(f"{where}: settings must be an object with keys among {sorted(_KEYS)}")
        models = entry.get("models")
        if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
            raise LLMConfigError(f"{where}: models must be a non-empty list of model names (or [\"*\"])")
        if entry.get("api_key_env") and entry.get("api_key_file"):
            raise LLMConfigError(f"{where}: give api_key_env or api_key_file, not both")
        for key in ("api_base", "api_key_env", "api_key_file"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise LLMConfigError(f"{where}: {key} must be a string")
        providers[name] = Provider(name, tuple(models), entry.get("api_base"), entry.get("api_key_env"), entry.get("api_key_file"))
    return Providers(providers)
