"""The REST reference as a Markdown page, rendered from the service's own OpenAPI document.

The documentation site renders it at build time (``docs/hooks.py``), so the page is the document the
running service answers at ``/openapi.json``, with no network and nothing to regenerate by hand.
``python -m service.reference`` prints it.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["client_operations", "openapi_document", "rest_reference"]

_METHODS = ("get", "post", "put", "patch", "delete")
_TAGS = {"llm": "LLM providers", "operations": "Health and metrics"}


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of an app built with the default settings on a throwaway SQLite file (nothing is
    served, migrated or loaded: building the document needs no database and no model)."""
    from service.app import create_app
    from service.settings import Settings

    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(database_url=f"sqlite:///{Path(folder) / 'reference.db'}"))
        document: dict[str, Any] = app.openapi()
    return document


def _cell(text: object) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return re.sub(r"\s+", " ", str(text)).replace("|", "\\|").strip()


def _anchor(name: str) -> str:
    return "schema-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def type_of(schema: Mapping[str, Any]) -> str:
    """A schema as one short Markdown expression: a link for a named schema, ``a | b`` for a union,
    ``list[...]`` and ``map[string, ...]`` for arrays and objects, an enum's values in quotes."""
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            parts = [type_of(part) for part in schema[key]]
            return (" & " if key == "allOf" else " \\| ").join(dict.fromkeys(parts))
    if "enum" in schema:
        return " \\| ".join(f'`"{value}"`' if isinstance(value, str) else f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']!r}`"
    kind = schema.get("type")
    if kind == "array":
        return f"list[{type_of(schema.get('items', {}))}]"
    if kind == "object" or "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return f"map[string, {type_of(extra)}]"
        return "object"
    if isinstance(kind, list):
        return " \\| ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def _rules(schema: Mapping[str, Any]) -> str:
    """The constraints a value must meet (bounds, lengths, pattern, default), as a short phrase."""
    found = [schema, *(part for part in schema.get("anyOf", []) if isinstance(part, Mapping))]
    rules = []
    for part in found:
        for key, word in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
            ("minLength", "length >="),
            ("maxLength", "length <="),
            ("minItems", "items >="),
            ("maxItems", "items <="),
        ):
            if key in part:
                rules.append(f"{word} {part[key]}")
        if "pattern" in part:
            rules.append(f"pattern `{part['pattern']}`")
    if "default" in schema and schema["default"] is not None:
        rules.append(f"default `{json.dumps(schema['default'])}`")
    return "; ".join(rules)


def _described(description: str | None, schema: Mapping[str, Any]) -> str:
    """A field's description, then its rules in brackets."""
    rules = _rules(schema)
    if description and rules:
        return f"{description} ({rules})"
    return description or rules


def _operation(path: str, method: str, operation: Mapping[str, Any]) -> list[str]:
    lines = [f"### `{method.upper()} {path}`", ""]
    if operation.get("description") or operation.get("summary"):
        lines += [str(operation.get("description") or operation["summary"]).strip(), ""]
    if operation.get("security"):
        lines += ["Authorisation: `Authorization: Bearer <API key>`.", ""]
    parameters = operation.get("parameters", [])
    if parameters:
        lines += ["| parameter | in | type | required | description |", "|---|---|---|---|---|"]
        for parameter in parameters:
            schema = parameter.get("schema", {})
            description = _described(parameter.get("description") or schema.get("description"), schema)
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {type_of(schema)} | "
                f"{'yes' if parameter.get('required') else 'no'} | {_cell(description)} |"
            )
        lines.append("")
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if body:
        lines += [f"Body (JSON): {type_of(body['schema'])}.", ""]
    lines += ["| status | answer | meaning |", "|---|---|---|"]
    for status, response in operation.get("responses", {}).items():
        content: Mapping[str, Any] = response.get("content", {})
        schema = next(iter(content.values())).get("schema") if content else None
        lines.append(f"| {status} | {type_of(schema) if schema else '-'} | {_cell(response.get('description', ''))} |")
    return [*lines, ""]


def _schema(name: str, schema: Mapping[str, Any]) -> list[str]:
    lines = [f"### {name} {{#{_anchor(name)}}}", ""]
    if schema.get("description"):
        lines += [str(schema["description"]).strip(), ""]
    properties = schema.get("properties", {})
    if not properties:
        return [*lines, f"{type_of({k: v for k, v in schema.items() if k != 'title'})}.", ""]
    required = set(schema.get("required", []))
    lines += ["| field | type | required | description |", "|---|---|---|---|"]
    for field, spec in properties.items():
        description = _described(spec.get("description"), spec)
        lines.append(f"| `{field}` | {type_of(spec)} | {'yes' if field in required else 'no'} | {_cell(description)} |")
    return [*lines, ""]


def rest_reference(document: Mapping[str, Any]) -> str:
    """The page: every operation grouped by its tag (parameters, body, every answer by status), then every
    schema with its fields, types, rules and descriptions; types link to their schema."""
    info = document.get("info", {})
    lines = [
        "# REST reference",
        "",
        f"{info.get('title', 'memtrial')} {info.get('version', '')}: every operation and schema of the service, rendered "
        "from its OpenAPI document when the site is built. A running service serves the same document at "
        "`/openapi.json` and an interactive reference at `/docs`.",
        "",
        'Errors answer `{"error": {"code", "message", "field", "errors"}}` '
        f"([ErrorBody](#{_anchor('ErrorBody')})). A write may carry an `Idempotency-Key` header: a retry with the "
        "same key gets the first answer. Lists are paged with `limit` and an opaque `cursor` (`next_cursor` in the "
        "answer).",
        "",
    ]
    by_tag: dict[str, list[tuple[str, str, Mapping[str, Any]]]] = {}
    for path, item in document.get("paths", {}).items():
        for method in _METHODS:
            if method in item:
                tag = (item[method].get("tags") or ["service"])[0]
                by_tag.setdefault(tag, []).append((path, method, item[method]))
    for tag, operations in by_tag.items():
        lines += [f"## {_TAGS.get(tag, tag.capitalize())}", ""]
        for path, method, operation in operations:
            lines += _operation(path, method, operation)
    lines += ["## Schemas", ""]
    for name, schema in sorted(document.get("components", {}).get("schemas", {}).items()):
        lines += _schema(name, schema)
    return "\n".join(lines).rstrip() + "\n"


def client_operations() -> str:
    """The operations of both Python clients (:class:`service.client.MemtrialClient`, and
    :class:`~service.client.AsyncMemtrialClient`, which awaits each), from the clients' one table of
    operations: each one's signature, the request it sends and what it answers."""
    import inspect

    from service.operations import Operation, Operations

    lines = [
        "| operation | request | answer |",
        "|---|---|---|",
    ]
    details = []
    for name, operation in vars(Operations).items():
        if not isinstance(operation, Operation):
            continue
        answer = str(operation.signature.return_annotation).removeprefix("Sent[").removesuffix("]")
        answer = re.sub(
            r"\b([A-Z]\w+(?:Public|List|Record|Detail|Result|Page))\b",
            lambda m: f"[{m[1]}](rest.md#{_anchor(m[1])})",
            answer,
        )
        lines.append(f"| [`{name}`](#client-{name}) | `{operation.method} {operation.path}` | {_cell(answer)} |")
        # the annotations as written (``from __future__ import annotations`` keeps them as quoted text)
        parameters = re.sub(
            r": '([^']*)'", r": \1", str(operation.signature.replace(return_annotation=inspect.Signature.empty))
        )
        details += [f"#### `{name}` {{#client-{name}}}", "", "```python", f"client.{name}{parameters}", "```", ""]
        doc = inspect.getdoc(operation.send)
        details += [doc, ""] if doc else []
        if operation.creates:
            details += ["Keyed: carries an `Idempotency-Key`, reused on a retry (which gets the first answer).", ""]
    return "\n".join([*lines, "", *details]).rstrip() + "\n"


def main() -> None:
    """Print the page."""
    print(rest_reference(openapi_document()))  # noqa: T201


if __name__ == "__main__":
    main()
