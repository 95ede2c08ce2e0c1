"""Print the service's OpenAPI document (JSON) to standard output, as ``GET /openapi.json`` serves it.

The app is built with the default settings on a throwaway SQLite database (nothing is written to it):
the document depends on the routes and their models, not on the data or the environment's settings.

    python clients/typescript/scripts/dump_openapi.py > openapi.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def openapi_document() -> dict[str, object]:
    """The OpenAPI document of :func:`service.app.create_app`."""
    from service.app import create_app
    from service.settings import Settings

    with tempfile.TemporaryDirectory() as folder:
        app = create_app(Settings(database_url=f"sqlite:///{Path(folder) / 'openapi.db'}"))
        return app.openapi()


def main() -> None:
    json.dump(openapi_document(), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
