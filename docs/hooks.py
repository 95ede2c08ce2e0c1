"""Build hooks of the documentation site (``mkdocs.yml``): the REST reference page is rendered from the
service's OpenAPI document at build time (:mod:`service.reference`), offline, so it cannot go stale."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

REST_PAGE = "reference/rest.md"
PYTHON_PAGE = "reference/python.md"
CLIENT_MARKER = "<!-- client-operations -->"


def on_files(files: Files, config: Any) -> Files:
    """Add the generated REST reference to the site's files (from the checkout that holds ``mkdocs.yml``)."""
    root = str(Path(config.config_file_path).resolve().parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from service.reference import openapi_document, rest_reference

    files.append(File.generated(config, REST_PAGE, content=rest_reference(openapi_document())))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    """Fill the Python reference's table of client operations from the clients' own table."""
    if page.file.src_uri != PYTHON_PAGE:
        return markdown
    from service.reference import client_operations

    if CLIENT_MARKER not in markdown:
        raise ValueError(f"{PYTHON_PAGE} lost its marker {CLIENT_MARKER}")
    return markdown.replace(CLIENT_MARKER, client_operations())


#: a cross-reference of a docstring (``:class:`~memtrial.curation.QuarantineConfig```) as the Python
#: reference renders it, the role left as text before the code span
_ROLE = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj):<code>(~?)([\w.]+)</code>")


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    """Show a docstring's cross-references as their names: ``:class:`~a.b.C``` reads ``C``, and
    ``:meth:`rank``` reads ``rank`` (the roles are the code's own markup, which the site does not link)."""
    return _ROLE.sub(lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html)
