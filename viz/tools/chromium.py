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


# Ready when a script run is over and nothing on the page is still loading.
SETTLED_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testConnectionState === 'CONNECTED'
    && app.dataset.testScriptState === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSpinner"], '
                               + '[data-testid="stSkeleton"]');
}"""

# Two animation frames: the browser has laid out and painted after a viewport change.
NEXT_PAINT_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"

# Height of everything that scrolls (Streamlit scrolls its main area and sidebar, not the document).
CONTENT_HEIGHT_JS = """() => Math.max(document.documentElement.scrollHeight,
  ...['stMain', 'stSidebarContent'].map(id => {
      const el = document.querySelector(`[data-testid="${id}"]`);
      return el ? el.scrollHeight + el.getBoundingClientRect().top : 0; }))"""
