"""Share links: the whole view (scenario, decode step, mode, presenter, head, position, tour step) in a compact, versioned URL.

A scenario travels as ``1.`` + base64url(zlib(compact JSON)). Decoding checks the version, caps
the decompressed size (a small link cannot expand into a huge one) and validates the scenario
like any other input: bad links raise :class:`viz.core.engine.scenario.ScenarioError`, never anything else.
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import zlib
from dataclasses import dataclass

from .model import MODES
from .scenario import MAX_DECODE_STEPS, MAX_JSON_BYTES, Scenario, ScenarioError

LINK_VERSION = "1"
MAX_TOUR_STEPS = 99  # a link's tour step above the tour's last step opens the last step
MAX_PARAM_CHARS = 40_000  # a longer `s` parameter is refused before decoding


@dataclass(frozen=True)
class View:
    """What a share link restores."""

    scenario: Scenario
    step: int = 0  # generated tokens shown on the Decode page
    mode: str = "kv"  # the decode mode shown in detail
    presenter: bool = False
    head: int = 0  # the head shown in detail (0-based index into the scenario's heads)
    position: int = 1  # the Prefill page's query position (1-based)
    tour: int = 1  # the guided tour's step (1-based)


@functools.lru_cache(maxsize=128)  # every run of a session in a class compares its view: the same few scenarios
def encode_scenario(scenario: Scenario) -> str:
    data = zlib.compress(scenario.to_json(indent=None).encode("utf-8"), 9)
    return f"{LINK_VERSION}.{base64.urlsafe_b64encode(data).decode('ascii').rstrip('=')}"


@functools.lru_cache(maxsize=64)  # a class's followers read the same link; a Scenario is frozen, errors not kept
def decode_scenario(text: str) -> Scenario:
    if len(text) > MAX_PARAM_CHARS:
        raise ScenarioError("link", f"the scenario in this link is too long ({len(text):,} characters)")
    version, dot, payload = text.partition(".")
    if not dot or not re.fullmatch(r"[0-9]{1,6}", version):
        raise ScenarioError("link", "this link's scenario is damaged (no version mark)")
    if version != LINK_VERSION:
        raise ScenarioError("link", f"this link was made by another kvlab (link version {version[:6]}, "
                                    f"this one reads {LINK_VERSION})")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", payload):
        raise ScenarioError("link", "this link's scenario is damaged and cannot be read")
    try:
        raw = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, MAX_JSON_BYTES + 1)  # stops early: no zip bombs
    except (binascii.Error, ValueError, zlib.error):
        raise ScenarioError("link", "this link's scenario is damaged and cannot be read") from None
    if inflater.unconsumed_tail or len(data) > MAX_JSON_BYTES:
        raise ScenarioError("link", f"the scenario in this link is larger than {MAX_JSON_BYTES:,} bytes")
    if not inflater.eof:
        raise ScenarioError("link", "this link's scenario is cut off; copy the whole link")
    if inflater.unused_data:  # bytes after the compressed stream: not a link kvlab made
        raise ScenarioError("link", "this link's scenario is damaged and cannot be read")
    try:
        text_json = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError("link", "this link's scenario is damaged and cannot be read") from None
    return Scenario.from_json(text_json)


def encode_view(view: View) -> dict[str, str]:
    """Query parameters for a view; defaults are left out to keep links short."""
    params = {"s": encode_scenario(view.scenario)}
    if view.step:
        params["step"] = str(view.step)
    if view.mode != "kv":
        params["mode"] = view.mode
    if view.presenter:
        params["present"] = "1"
    if view.head:
        params["head"] = str(view.head + 1)  # 1-based, as the pages number heads
    if view.position != 1:
        params["pos"] = str(view.position)
    if view.tour != 1:
        params["tour"] = str(view.tour)
    return params


LINK_PAGE = "page"  # a share link names its page in the query and opens at / (viz.ui.state.link_params)


def link_query(page: str, view: View) -> dict[str, str]:
    """The query of a share link that opens ``view`` on the page at url path ``page``."""
    return {LINK_PAGE: page, **encode_view(view)}


def _whole(params: dict[str, str], key: str, low: int, high: int, what: str,
           problems: list[str]) -> int | None:
    """A whole number from low to high (ASCII digits only), or None with a problem noted."""
    text = params.get(key)
    if text is None:
        return None
    if re.fullmatch(r"[0-9]{1,6}", text) and low <= int(text) <= high:
        return int(text)
    problems.append(f"the {what} in this link must be a whole number from {low} to {high}")
    return None


def decode_view(params: dict[str, str], default: Scenario) -> tuple[View, list[str]]:
    """The view a link asks for, and a message for each part that could not be used.

    A bad part falls back to its default (the scenario to ``default``), so a damaged link still
    opens the app, with the reason shown.
    """
    problems: list[str] = []
    scenario = default
    if "s" in params:
        try:
            scenario = decode_scenario(params["s"])
        except ScenarioError as err:
            problems.append(str(err) if err.path != "link" else err.message)
    step = _whole(params, "step", 0, MAX_DECODE_STEPS, "step", problems) or 0
    head = _whole(params, "head", 1, len(scenario.heads), "head", problems) or 1
    position = _whole(params, "pos", 1, len(scenario.tokens), "prompt position", problems) or 1
    tour = _whole(params, "tour", 1, MAX_TOUR_STEPS, "tour step", problems) or 1
    mode = params.get("mode", "kv")
    if mode not in MODES:
        problems.append(f"unknown decode mode in this link (use one of {', '.join(MODES)})")
        mode = "kv"
    presenter = params.get("present", "0") in ("1", "true")
    return View(scenario, step, mode, presenter, head - 1, position, tour), problems
