"""Service: LLM providers reach only hosts the operator's file names or implies."""

import json

import pytest


@pytest.mark.parametrize(
    "entry, message",
    [
        ({"models": ["*"]}, 'needs a "prefix"'),
        ({"models": ["ollama/llama3"]}, "default endpoint on this host"),
        ({"models": ["*"], "prefix": "llamafile/"}, "default endpoint on this host"),
        ({"models": ["anthropic/claude"], "prefix": "openai/"}, "outside the provider's namespace"),
    ],
)
def test_provider_files_that_would_reach_unnamed_hosts_are_refused(tmp_path, entry, message):
    from service.providers import LLMConfigError, load_providers

    path = tmp_path / "llm.json"
    path.write_text(json.dumps({"providers": {"p": entry}}))
    with pytest.raises(LLMConfigError, match=message):
        load_providers(str(path))


def test_a_wildcard_allows_only_its_namespace_and_local_defaults_need_an_api_base(tmp_path):
    from service.providers import load_providers

    path = tmp_path / "llm.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "cloud": {"models": ["*"], "prefix": "openai/"},
                    "box": {"models": ["*"], "prefix": "ollama/", "api_base": "http://127.0.0.1:11434"},
                }
            }
        )
    )
    providers = load_providers(str(path))
    cloud, box = providers.get("cloud"), providers.get("box")
    assert cloud.allows("openai/gpt-4o-mini") and not cloud.allows("ollama/llama3") and not cloud.allows("llamafile/x")
    assert box.allows("ollama/llama3") and not box.allows("openai/gpt-4o")
