"""The LLM providers server drafting may call: the operator's configuration, never a tenant's.

``MEMTRIAL_LLM_CONFIG`` names a JSON file::

    {"providers": {
        "openai": {"models": ["openai/gpt-4o-mini"], "api_key_env": "OPENAI_API_KEY"},
        "local":  {"models": ["openai/local"], "api_base": "http://127.0.0.1:8080/v1", "api_key_file": "/run/secrets/local"}
    }}

A tenant's agent names a provider and one of its models; the endpoint and the
key come from here, read when a draft is made (a key is never stored with an
agent, never returned, never logged).

The server connects only to hosts this file names or implies:

- ``"prefix"`` declares the provider's model namespace (``"openai/"``): every
  model must start with it. ``"models": ["*"]`` allows any model *in that
  namespace*, so a wildcard needs a prefix;
- a provider without ``api_base`` reaches the model's public default endpoint,
  so it may not name models whose default endpoint is on this host
  (``ollama/``, ``llamafile/``, ``lm_studio/``, ...: :data:`LOCAL_DEFAULTS`);
  a local server is reached only through an ``api_base`` the operator writes.
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
_KEYS = {"models", "prefix", "api_base", "api_key_env", "api_key_file"}
#: litellm providers whose default endpoint is on the server's own host (or which need an api_base)
LOCAL_DEFAULTS = frozenset(
    {
        "ollama",
        "ollama_chat",
        "llamafile",
        "lm_studio",
        "xinference",
        "oobabooga",
        "vllm",
        "hosted_vllm",
        "triton",
        "lemonade",
        "docker_model_runner",
        "litellm_proxy",
        "openai_like",
        "custom_openai",
        "custom",
        "petals",
        "llama_cpp",
        "local",
    }
)


def model_provider(model: str) -> str | None:
    """The litellm provider a model name routes to by its prefix (None: no prefix, litellm's own mapping)."""
    head, slash, _ = model.partition("/")
    return head.lower() if slash else None


def _refusal(prefix: str | None, api_base: str | None, model: str) -> str | None:
    """Why a provider with this prefix and endpoint may not call ``model`` (None: it may)."""
    if prefix is not None and not model.startswith(prefix):
        return f"lies outside the provider's namespace {prefix!r}"
    if api_base is None and model_provider(model) in LOCAL_DEFAULTS:
        return f"would reach {model_provider(model)!r}'s default endpoint on this host; the operator must give the provider an api_base"
    return None


class LLMConfigError(ValueError):
    """The operator's LLM configuration is unusable (the message names the file and the entry)."""


@dataclass(frozen=True, slots=True)
class Provider:
    name: str
    models: tuple[str, ...]
    api_base: str | None = None
    api_key_env: str | None = None
    api_key_file: str | None = None
    prefix: str | None = None

    def allows(self, model: str) -> bool:
        return self.refusal(model) is None

    def refusal(self, model: str) -> str | None:
        """Why this provider may not call ``model`` (None: it may)."""
        if "*" not in self.models and model not in self.models:
            return f"is not among the provider's models {list(self.models)}"
        return _refusal(self.prefix, self.api_base, model)

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
        raise LLMConfigError(
            f"MEMTRIAL_LLM_CONFIG: {path} must be an object with one key, providers (name -> settings)"
        )
    providers = {}
    for name, entry in data["providers"].items():
        where = f"MEMTRIAL_LLM_CONFIG: {path}: provider {name!r}"
        if not _NAME.match(name):
            raise LLMConfigError(f"{where}: names use letters, digits, '_', '.', '-' (at most 64)")
        if not isinstance(entry, dict) or not set(entry) <= _KEYS:
            raise LLMConfigError(f"{where}: settings must be an object with keys among {sorted(_KEYS)}")
        models = entry.get("models")
        if not isinstance(models, list) or not models or not all(isinstance(m, str) and m for m in models):
            raise LLMConfigError(f'{where}: models must be a non-empty list of model names (or ["*"])')
        if entry.get("api_key_env") and entry.get("api_key_file"):
            raise LLMConfigError(f"{where}: give api_key_env or api_key_file, not both")
        for key in ("api_base", "api_key_env", "api_key_file", "prefix"):
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise LLMConfigError(f"{where}: {key} must be a string")
        prefix, api_base = entry.get("prefix") or None, entry.get("api_base") or None
        if "*" in models and prefix is None:
            raise LLMConfigError(
                f'{where}: "models": ["*"] needs a "prefix" (e.g. "openai/"): a wildcard allows any model of one namespace'
            )
        if prefix is not None and api_base is None and model_provider(prefix + "x") in LOCAL_DEFAULTS:
            raise LLMConfigError(
                f"{where}: prefix {prefix!r} routes to a default endpoint on this host; give an api_base"
            )
        for model in models:
            why = None if model == "*" else _refusal(prefix, api_base, model)
            if why is not None:
                raise LLMConfigError(f"{where}: model {model!r} {why}")
        providers[name] = Provider(
            name, tuple(models), api_base, entry.get("api_key_env"), entry.get("api_key_file"), prefix
        )
    return Providers(providers)
