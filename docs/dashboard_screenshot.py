"""Write docs/dashboard.png: the dashboard of a demo agent after 30 scored decisions, in headless Chromium.

python docs/dashboard_screenshot.py
"""

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "service")]

from live_server import Server  # noqa: E402
from support import make_tenant  # noqa: E402
from test_dashboard import populate, render  # noqa: E402

from service.client import MemtrialClient  # noqa: E402


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/demo.db"
        server = Server(url)
        try:
            key = make_tenant(url, "demo")
            with MemtrialClient(server.url, key) as client:
                agent = populate(client)
            _, shot = render(f"{server.url}/dashboard/{agent.id}#key={key}", Path(folder), height=1300)
            shutil.copy(shot, ROOT / "docs" / "dashboard.png")
        finally:
            server.stop()
    print(f"wrote {ROOT / 'docs' / 'dashboard.png'}")


if __name__ == "__main__":
    main()
