"""Screenshots of the app in Chromium: the README's few small PNGs, or a review set of pages × sizes.

    python -m viz.tools.screenshots                      # docs/screenshots/*.png for the README
    python -m viz.tools.screenshots --review /tmp/shots  # every page at 1440×900, presenter 1280×720
                                                         # and 1920×1080, and 390×844 (a phone)

It starts its own server (``viz.tools.server``). The README's PNGs are reduced to a palette of
colours and a width of 960 px with Pillow, so all of them together stay a few hundred KB. Not run by
the tests; the app never imports it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

from .chromium import CONTENT_HEIGHT_JS, NEXT_PAINT_JS, SETTLED_JS, launch_options
from .server import ROOT, StreamlitServer

README_DIR = ROOT / "docs" / "screenshots"
README_WIDTH = 960  # px of the saved PNG
README_COLOURS = 96
MAX_HEIGHT = 6000  # px; a review screenshot of a longer page is cut there


@dataclass(frozen=True)
class Shot:
    name: str
    path: str  # url path, "/" for Home
    params: dict[str, str] = field(default_factory=dict)
    width: int = 1440
    height: int = 900
    click: tuple[str, ...] = ()  # buttons to press (by accessible name) before the picture
    full: bool = False  # the whole page (review), not only the first screen


def readme_shots() -> list[Shot]:
    """Home, Decode a few steps in, the tour's vote, and Decode in presenter mode."""
    return [Shot("home", "/"), Shot("decode", "/decode", {"step": "3"}),
            Shot("tour", "/tour", {"tour": "3"}),
            Shot("presenter", "/decode", {"step": "3", "present": "1"}, 1920, 1080)]


REVIEW_SIZES = (("1440x900", 1440, 900, False), ("presenter-1280x720", 1280, 720, True),
                ("presenter-1920x1080", 1920, 1080, True), ("phone-390x844", 390, 844, False))


def review_shots(paths: list[str]) -> list[Shot]:
    """Each url path at each review size, first screen and whole page."""
    shots = []
    for path in paths:
        stem = path.strip("/") or "home"
        for size, width, height, presenter in REVIEW_SIZES:
            params = {"present": "1"} if presenter else {}
            shots.append(Shot(f"{stem}-{size}", path, params, width, height))
            shots.append(Shot(f"{stem}-{size}-full", path, params, width, height, full=True))
    return shots


def _settle(page) -> None:
    page.wait_for_function(SETTLED_JS, timeout=180_000)
    page.evaluate(NEXT_PAINT_JS)


def take(browser, base: str, shot: Shot, out: Path) -> Path:
    """Open the shot's address in a fresh context, press its buttons, and save a PNG."""
    context = browser.new_context(viewport={"width": shot.width, "height": shot.height})
    try:
        page = context.new_page()
        page.goto(base + shot.path + (f"?{urlencode(shot.params)}" if shot.params else ""))
        page.get_by_test_id("stMain").wait_for()
        _settle(page)
        for name in shot.click:
            page.get_by_role("button", name=name).first.click()
            _settle(page)
        if shot.full:
            page.set_viewport_size({"width": shot.width,
                                    "height": min(int(page.evaluate(CONTENT_HEIGHT_JS)), MAX_HEIGHT)})
            _settle(page)
        target = out / f"{shot.name}.png"
        page.screenshot(path=str(target))
        return target
    finally:
        context.close()


def compress(path: Path, width: int = README_WIDTH, colours: int = README_COLOURS) -> int:
    """Resize to ``width`` px and reduce to a palette; returns the new size in bytes."""
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        if image.width > width:
            image = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
        image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.screenshots", description=__doc__.split("\n")[0])
    parser.add_argument("--review", type=Path, help="write a review set (every page, four sizes) here instead")
    parser.add_argument("--pages", default="/,/tour,/prefill,/decode,/cost,/memory,/at_scale,/real_model,/serving",
                        help="url paths for --review, comma-separated")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = args.review or README_DIR
    out.mkdir(parents=True, exist_ok=True)
    shots = review_shots(args.pages.split(",")) if args.review else readme_shots()
    with StreamlitServer(out / "screenshots-server.log") as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_options())
        try:
            for shot in shots:
                path = take(browser, server.url, shot, out)
                size = path.stat().st_size if args.review else compress(path)
                print(f"{path}  {size / 1024:.0f} KB")
        finally:
            browser.close()
    if not args.review:
        (out / "screenshots-server.log").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
