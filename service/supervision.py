"""Workers that die with their supervisor.

``memtrial serve --workers N`` runs N worker processes under one supervisor.
If the supervisor is killed (even with SIGKILL, which it cannot handle), its
workers must not go on serving the port unsupervised: a watchdog thread in
each worker notices within a second that its parent is gone (it has been
re-parented), shuts the worker down, and exits hard if shutting down takes
longer than ``grace`` seconds.
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["watch_supervisor"]


def watch_supervisor(supervisor_pid: int, grace: float = 15.0) -> None:
    """Terminate this process when its supervisor ``supervisor_pid`` is no longer its parent."""
    if os.getppid() != supervisor_pid:
        os.kill(os.getpid(), signal.SIGTERM)

    def watch() -> None:
        while os.getppid() == supervisor_pid:
            time.sleep(1.0)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    threading.Thread(target=watch, name="supervisor-watch", daemon=True).start()
