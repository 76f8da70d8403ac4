"""The browser the course's checks drive: the system Chromium (``CHROMIUM`` overrides its path),
started by Playwright with the flags a closed network and a container need; never downloaded."""
from __future__ import annotations

import os

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-default-apps", "--metrics-recording-only"]


def chromium_available() -> bool:
    return os.access(CHROMIUM, os.X_OK)
