"""Small rendering helpers shared by the pages: charts, headers, messages. No math here."""

from __future__ import annotations

import re
from typing import Callable

import plotly.graph_objects as go
import streamlit as st

from ..core.division import DivisionByZero
from . import state

PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def plot(fig: go.Figure, key: str | None = None) -> None:
    """Show a plotly figure at full width; in presenter mode with larger type."""
    if state.presenter():
        fig.update_layout(font_size=18)
    st.plotly_chart(fig, width="stretch", config=PLOT_CONFIG, key=key)


# Every character CommonMark lets a backslash escape, but for , and ; which no construct uses.
_ASCII_PUNCTUATION = re.compile(r"[!-+\-./:<-@\[-`{-~]")
# GFM turns www.…, http(s)://… and e-mail addresses into links after escapes are resolved, so a
# backslash cannot stop it; an invisible word joiner inside the pattern does.
WORD_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?i)(?<=www)(?=\.)|(?<=http)(?=s?://)|(?=@)")
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\t\v\f\x85\u2028\u2029]")


def md_escape(text: object) -> str:
    """Visitor text for anything Streamlit renders as Markdown: it shows exactly as typed.

    The one way visitor text (tokens, head names, rules, words, prompts, titles, messages that
    quote any of them) reaches ``st.markdown``, captions, alerts, widget labels, ``help=``,
    Markdown-rendering options (radio, segmented control, select slider), column help, metric
    and tab labels. Every ASCII punctuation character (but , and ;) gets a backslash, which
    CommonMark turns back into that literal character, so nothing can open a link or image (``[…](…)``, autolinks,
    ``www.``), HTML (``<…>``), emphasis, code, a table, KaTeX (``$…$``), a Streamlit directive
    (``:blue[…]``), a ``:material/…:`` icon or an emoji shortcode; line breaks become spaces
    (no headings, lists or code blocks) and leading spaces no-break spaces (no indented code).
    GitHub's autolinks (``www.``, ``https://``, ``a@b.org``) are found after escapes are resolved,
    so an invisible word joiner (U+2060) goes inside each of those patterns instead.
    """
    text = _LINE_BREAKS.sub(" ", str(text))
    stripped = text.lstrip(" ")
    text = "\u00a0" * (len(text) - len(stripped)) + stripped
    text = _AUTOLINK.sub(WORD_JOINER, text)
    return _ASCII_PUNCTUATION.sub(lambda match: "\\" + match.group(), text)


@st.cache_resource
def favicon():
    """A 4 × 4 causal mask as the tab icon, drawn here so no icon is fetched from the internet."""
    from PIL import Image, ImageDraw

    image = Image.new("RGBA", (64, 64), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    for i in range(4):
        for j in range(4):
            color = (31, 95, 168, 255) if j <= i else (214, 222, 235, 255)
            draw.rectangle([j * 16 + 1, i * 16 + 1, j * 16 + 14, i * 16 + 14], fill=color)
    return image


def division_notices(found: list[DivisionByZero]) -> None:
    """Say where a head's rule divided by zero (so the rule counted as false there)."""
    for item in found:
        st.warning(md_escape(item.text), icon=":material/calculate:")


def header(title: str, caption: str) -> None:
    """Page title and one line on what the page shows."""
    st.title(title)
    st.caption(caption)


def stepper(key: str, count: int, label: str, *, first: int = 1,
            format_label: Callable[[int], str] = str, help: str | None = None) -> int:
    """A slider between ← and → buttons (also the arrow keys); returns the chosen value.

    ``format_label`` returns plain text (it may quote visitor text); the stepper escapes it."""
    current = min(max(int(st.session_state.get(key, first)), first), count)
    st.session_state[key] = current

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, first), count)

    back, middle, forward = st.columns([1, 10, 1], vertical_alignment="bottom")
    back.button("", icon=":material/arrow_back:", key=f"{key}_back", on_click=move, args=(-1,),
                shortcut="left", disabled=current <= first, help="Back (←)")
    forward.button("", icon=":material/arrow_forward:", key=f"{key}_forward", on_click=move, args=(1,),
                   shortcut="right", disabled=current >= count, help="Forward (→)")
    with middle:
        if count > first:  # its options render Markdown, and labels may quote visitor text
            st.select_slider(label, options=list(range(first, count + 1)), key=key,
                             format_func=lambda value: md_escape(format_label(value)), help=help)
        else:
            st.markdown(f"{label}: {md_escape(format_label(current))}")
    return st.session_state[key]
