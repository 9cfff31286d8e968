"""Debian's Chromium as every browser tool and test here launches it through Playwright.

Playwright's own browser download does not work on these machines; ``/usr/bin/chromium`` comes
from Debian (``apt-get install -y chromium``) and runs with the flags below.
"""

from __future__ import annotations

from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
MISSING = (f"{CHROMIUM} is missing: the browser tests and tools need Debian's Chromium. "
           "Run `apt-get install -y chromium`.")


def launch_options() -> dict:
    """Keyword arguments for Playwright's ``chromium.launch`` (sync or async)."""
    return {"executable_path": str(CHROMIUM), "args": CHROMIUM_FLAGS}
