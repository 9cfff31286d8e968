"""Small rendering helpers shared by the pages: charts, headers, messages. No math here."""

from __future__ import annotations

import base64
import functools
import html
import re
from typing import Callable

import plotly.graph_objects as go
import streamlit as st

from ..core.engine.division import DivisionByZero
from ..core.lessons.lesson import HEAD_HELP, HEAD_PICKER, WHOLE_ALL_SHOWN, LessonFrame, Window
from ..core.lessons.glossary import defined, hover
from ..core.lessons.leads import DEVELOPERS, PAGE_LEADS, PRESENTER_HINT
from ..core.text import clip_words
from ..figures.base import CROWDED_ON_A_PHONE, DESKTOP_PX, PRESENTER_PX, figure_table, figure_terms, fit, font_sizes
from ..figures.board import attention_board, cache_board, fits, words_board
from ..figures.lesson import attention_figure, cache_figure, frame_tables
from . import state
from .board import BACK_KEYS_HELP, STEP_KEYS_HELP, board, button_selector, lesson_keys

# No Plotly toolbar (its documented displayModeBar): it lay over the figure's top right, where a title
# ends, and on a phone a tap left it there. A drag still zooms, a double-click zooms back out, and
# Streamlit's own toolbar, outside the figure, still offers full screen.
PLOT_CONFIG = {"displaylogo": False, "displayModeBar": False}
PRESENTER_TEXT_PX = font_sizes(True).text  # the least any figure text is in presenter mode (16 px)


# The most a column of a row loses to Streamlit's gaps (px): one "medium" gap, 2 rem (32 px at a desk,
# 36.8 in presenter mode at 1280 × 720, whose root font is 2.55 vh; a "small" gap is half that). A
# column of share s of n columns is s × (main − (n − 1) × gap) wide, and s × (n − 1) ≤ 1 for every
# column kvlab draws (two columns, n equal ones, or one share of 1.3 / 3); a column in a column loses
# at most one small gap more (narration_beside): one medium gap covers them all.
GAP_PX = {False: 32, True: 37}


def column_px(share: float = 1.0) -> int:
    """The width (px) of a column taking ``share`` of the main column: at a desk beside the sidebar
    (1440 × 900), or in presenter mode with the sidebar folded (1280 × 720); never wider than the column
    Chromium draws there (a guess too wide gave legends too few rows: a third of a projector measured
    341-353 px where ``share`` alone said 393)."""
    presenter = state.presenter()
    main = PRESENTER_PX if presenter else DESKTOP_PX
    return int(main * share - (GAP_PX[presenter] if share < 1 else 0))


def terms_caption(drawn: go.Figure | dict, shown: set[str] | None = None) -> None:
    """A folded "Terms" under a figure or board: the glossary's one-line definition of each term its
    titles, axes and legend use. ``shown`` collects the terms already defined on this page, so a term
    is defined once, under the first figure that uses it."""
    terms = [t for t in figure_terms(drawn) if shown is None or t.term not in shown]
    if not terms:
        return
    if shown is not None:
        shown.update(t.term for t in terms)
    with st.expander("Terms", icon=":material/help:"):
        st.markdown("  \n".join(md_escape(hover(t.term)) for t in terms))  # "term: its definition"


def _defining(body: str) -> str | None:
    """The hover of Markdown ``body`` from the core: the definitions of the unfamiliar terms it uses (d_k,
    TTFT, ticks, …: :func:`viz.core.lessons.glossary.defined`), None where it uses none."""
    return md_escape(defined(body.replace("\\", ""))) or None


def defined_caption(body: str, where=st) -> None:
    """A caption (Markdown from the core) whose hover defines the unfamiliar terms it uses, drawn in ``where``."""
    where.caption(body, help=_defining(body))


def defined_markdown(body: str) -> None:
    """A paragraph (Markdown from the core) whose hover defines the unfamiliar terms it uses."""
    st.markdown(body, help=_defining(body))


def plot(fig: go.Figure, key: str | None = None, table: bool = False, share: float = 1.0,
         terms: set[str] | None = None) -> None:
    """Show a plotly figure at full width, fitted (:func:`viz.figures.base.fit`) to its column
    (``share`` of the main column): its title broken for that width, every text at least 12 px at a
    desk and 16 px in presenter mode. ``table`` adds a folded "As a table" under it (its numbers, built
    only when opened), as does a heatmap whose cell numbers a phone could not hold (drawn there by bars that
    Plotly hides under 9 px: :func:`viz.figures.room.numbers_layer`); ``terms`` (the page's set of terms
    already defined) adds a folded "Terms"."""
    fit(fig, width=column_px(share), presenter=state.presenter())
    st.plotly_chart(fig, width="stretch", config=PLOT_CONFIG, key=key)
    if key is not None and fig.layout.meta[CROWDED_ON_A_PHONE]:  # numbers a phone does not draw: a table there
        table = True
    if table:
        folded("As a table", f"{key}_table",
               lambda: st.dataframe(figure_table(fig), hide_index=True, width="stretch", height=240))
    if terms is not None:
        terms_caption(fig, terms)


def folded(label: str, key: str, body: Callable[[], None], icon: str | None = None) -> bool:
    """A folding panel whose ``body`` runs only while it is open (opening it reruns; ``key`` keeps
    whether it is open). Returns whether it is open."""
    fold = st.expander(label, icon=icon, key=key, on_change="rerun")
    if fold.open:  # what nobody opened is neither computed nor sent nor laid out
        with fold:
            body()
    return bool(fold.open)


# Every character CommonMark lets a backslash escape, but for , and ; which no construct uses.
_ASCII_PUNCTUATION = re.compile(r"[!-+\-./:<-@\[-`{-~]")
# GFM turns www.…, http(s)://… and e-mail addresses into links after escapes are resolved, so a
# backslash cannot stop it. Such a run goes into a code span instead: GFM finds autolinks only in
# plain text, and a code span shows its characters as they are, so copied text is what was typed.
_AUTOLINK = re.compile(r"(?i)(?:https?://|www\.)\S*|[-.\w+]*@[-\w]+(?:\.[-\w]+)+")
_BACKTICKS = re.compile(r"`+")
_LINE_BREAKS = re.compile(r"\r\n|[\n\r\t\v\f\x85\u2028\u2029]")


def md_escape(text: object) -> str:
    """Visitor text for anything Streamlit renders as Markdown: it shows exactly as typed.

    The one way visitor text (tokens, head names, rules, words, prompts, titles, messages that
    quote any of them) reaches ``st.markdown``, captions, alerts, widget labels, ``help=``,
    Markdown-rendering options (radio, segmented control), column help and tab
    labels. Every ASCII punctuation character (but , and ;) gets a backslash, which
    CommonMark turns back into that literal character, so nothing can open a link or image (``[…](…)``, autolinks,
    ``www.``), HTML (``<…>``), emphasis, code, a table, KaTeX (``$…$``), a Streamlit directive
    (``:blue[…]``), a ``:material/…:`` icon or an emoji shortcode; line breaks become spaces
    (no headings, lists or code blocks) and leading spaces no-break spaces (no indented code).
    GitHub's autolinks (``www.``, ``https://``, ``a@b.org``) are found after escapes are resolved,
    so each such run is shown as a code span instead, with no character added (copying it gives
    what was typed).
    """
    text = _LINE_BREAKS.sub(" ", str(text))
    stripped = text.lstrip(" ")
    text = "\u00a0" * (len(text) - len(stripped)) + stripped
    pieces, start = [], 0
    for match in _AUTOLINK.finditer(text):
        pieces += [_escape_punctuation(text[start:match.start()]), _code_span(match.group())]
        start = match.end()
    return "".join(pieces) + _escape_punctuation(text[start:])


def _escape_punctuation(text: str) -> str:
    return _ASCII_PUNCTUATION.sub(lambda match: "\\" + match.group(), text)


def _code_span(text: str) -> str:
    """``text`` as a CommonMark code span: a fence longer than any run of backticks inside it, and a
    space at each end where the text starts or ends with a backtick (CommonMark strips one each)."""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


@functools.cache
def favicon() -> str:
    """A 4 × 4 causal mask as the tab icon, drawn here so no icon is fetched from the internet: an SVG
    data URL, which Streamlit passes to the page as it is (an image would be encoded as a PNG and
    stored as a media file on every full rerun, and fetched again by the browser each time)."""
    cells = "".join(f'<rect x="{j * 16 + 1}" y="{i * 16 + 1}" width="14" height="14" '
                    f'fill="{"#1f5fa8" if j <= i else "#d6deeb"}"/>' for i in range(4) for j in range(4))
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64">{cells}</svg>'
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()


def division_notices(found: list[DivisionByZero]) -> None:
    """Say where a head's rule divided by zero (so the rule counted as false there)."""
    for item in found:
        st.warning(md_escape(item.text), icon=":material/calculate:")


def header(title: str, caption: str) -> None:
    """Page title and one line on what the page shows."""
    st.title(title)
    st.caption(caption)


def page_lead(url_path: str) -> None:
    """A page's title and the one sentence of what it teaches (viz.core.lessons.leads), above its
    lesson figure."""
    lead = PAGE_LEADS[url_path]
    lesson_header(lead.title, lead.sentence)


def for_developers():
    """The fold that holds a page's developer material (commands, folders, allocator notes), away
    from the lesson: use it as a ``with`` block."""
    return st.expander(DEVELOPERS, icon=":material/terminal:")


SIDE_SHARE = 0.25  # the share of the main column the controls beside a lesson figure take
LESSON_SHARE = 1 - SIDE_SHARE  # and the figure's


def beside_in_presenter_mode() -> tuple:
    """Where a page puts the few controls that drive its lesson figure, and the figure: in presenter
    mode a narrow column beside a wide one, so the figure fits a projector's first screen (1280 × 720);
    at a desk both are the main column, the controls above. Returns (controls, lesson, the lesson's
    share of the main column, for :func:`plot`)."""
    if state.presenter():
        side, body = st.columns([SIDE_SHARE, LESSON_SHARE])
        return side, body, LESSON_SHARE
    return st.container(), st.container(), 1.0


FIGURE_SHARE = 0.62  # a compact lesson figure's share of its column, its narration beside it


def narration_beside(share: float = 1.0) -> tuple:
    """A compact lesson figure (a grid of rounds or tiles) with its narration beside it instead of
    above, so both fit the first screen under the step control (on a phone: the figure, then the
    narration). ``share``: the lesson's share of the main column. Returns (the figure's column, the
    narration's, the figure's share of the main column, for :func:`plot`)."""
    figure, note = st.columns([FIGURE_SHARE, 1 - FIGURE_SHARE])
    return figure, note, share * FIGURE_SHARE


# The most characters a step's name shows over the slider's thumb: a phone's slider, between ← and →, is
# 242 px wide (Chromium, 390 × 844), the tour's 40-character first step took 223 px, and a longer name
# ("10. Epilogue: who computes in each iteration", 261 px) ran past the slider's left end over the ←
# button; the whole name is the step's title or its row on the page (cut by viz.core.text.clip_words).
VALUE_CHARS = 40


def held_step(key: str, count: int, first: int = 1, opening: int | None = None) -> int:
    """The value a stepper under ``key`` holds (``opening``, default ``first``, until it has one), kept
    within ``first``..``count``; also where no stepper is drawn (a student's screen following a teacher's)."""
    current = min(max(int(st.session_state.get(key, first if opening is None else opening)), first), count)
    st.session_state[key] = current
    return current


def stepper(key: str, count: int, label: str, *, first: int = 1, opening: int | None = None, run: object = None,
            format_label: Callable[[int], str] = str, help: str | None = None, chips: int = 0) -> int:
    """A slider from ``first`` to ``count`` between ← and → buttons (also the lesson's keys: → PageDown
    Space, ← PageUp, whatever has focus; :func:`viz.ui.board.lesson_keys`); returns the chosen value.
    Up to ``chips`` values are a segmented control after ← and → instead: every value's name in view,
    one click each (Prefill's few positions are the prompt's words). Either is under widget key
    ``{key}_range``.

    The value lives in the session under ``key``, so it survives while the stepper is not drawn (a
    tab that is closed, another page). It opens at ``opening`` (default ``first``). A new run (``run``:
    what the frames were made from, settings compared with ==; None: the value stays whatever the run)
    keeps the moment shown where the new run has one of the same name (``format_label``; the nearest
    such when several), so a setting changed at "decode 1" shows "decode 1" again, under the new
    setting; where it has none, the new run opens at its opening. ``label`` and ``format_label`` (each
    value's name) are plain text, which may quote visitor text: both are escaped here (Streamlit renders
    them as Markdown); a value's name is cut to :data:`VALUE_CHARS` (:func:`viz.core.text.clip_words`),
    so it stays over the slider on a phone."""
    opening = first if opening is None else opening
    if run is not None and st.session_state.get(f"{key}_run") != run:  # a new run: the same moment, else its opening
        held = st.session_state.get(f"{key}_moment")
        same = [v for v in range(first, count + 1) if held is not None and format_label(v) == held[1]]
        st.session_state[f"{key}_run"] = run
        st.session_state[key] = min(same, key=lambda v: abs(v - held[0])) if same else opening
    current = held_step(key, count, first, opening)
    st.session_state[f"{key}_moment"] = (current, format_label(current))  # what a new run looks for

    def move(delta: int) -> None:
        st.session_state[key] = min(max(st.session_state[key] + delta, first), count)

    def moved(value: int) -> None:
        st.session_state[key] = value

    def forward() -> None:
        st.button("", icon=":material/arrow_forward:", key=f"{key}_forward", on_click=move, args=(1,),
                  disabled=current >= count, help=f"Forward ({STEP_KEYS_HELP})")

    # one row on every screen (columns would stack into three rows on a phone): ←, the slider, →; or
    # ← → and the chips, which wrap under the two arrows on a phone (not between them)
    values, name = range(min(first, count), count + 1), lambda v: md_escape(clip_words(format_label(v), VALUE_CHARS))
    with st.container(horizontal=True, vertical_alignment="bottom", key=f"{key}_row"):
        with st.container(width="content", gap=None):  # the keys (nothing drawn) take no gap of the row
            lesson_keys(f"{key}_forward", f"{key}_back")
            st.button("", icon=":material/arrow_back:", key=f"{key}_back", on_click=move, args=(-1,),
                      disabled=current <= first, help=f"Back ({BACK_KEYS_HELP})")
        if len(values) <= chips:  # all in view, and no slider's script files on the first view (docs/performance.md)
            forward()
            st.segmented_control(md_escape(label), values, format_func=name, required=True, disabled=count <= first,
                                 help=help, **state.bound(f"{key}_range", current, moved))
        else:
            st.select_slider(md_escape(label), values, width="stretch", format_func=name, disabled=count <= first,
                             help=help, **state.bound(f"{key}_range", current, moved))
            forward()
    return st.session_state[key]


def inline_label(label: str, help: str) -> None:
    """A choice's visible label at its left, in the row the choice sits in (the choice's own label,
    collapsed, still names it for a screen reader): beside it, not above, so a lesson's row of choices
    takes no more height on a projector or a phone."""
    st.caption(label, help=help, width="content")


def labelled(label: str, help: str):
    """A row of its own for one choice and its :func:`inline_label`, drawn in it now: the choice goes
    in with ``with``. The two stay together where a row of choices wraps (a phone), and stand without
    a gap between them (the (?) has room of its own), so a lesson's row of choices stays one row."""
    pair = st.container(horizontal=True, vertical_alignment="center", gap=None, width="content")
    with pair:
        inline_label(label, help)
    return pair


def head_picker(key: str) -> int:
    """The head shown in detail (0-based): one choice shared by the pages and kept in share links. Its
    options are the heads' names, and the figure right under it is titled with the head it shows. Drawn
    in a row: its label "Head" at its left (:func:`labelled`), whose (?) says what a head is (the
    picker's own label, collapsed, carries no second one)."""
    names = state.scenario().head_names
    with labelled(HEAD_PICKER, HEAD_HELP):
        st.segmented_control(HEAD_PICKER, range(len(names)), format_func=lambda i: md_escape(names[i]),
                             required=True, label_visibility="collapsed",
                             **state.bound(key, state.head(), state.set_head))
    return state.head()


# A switch's two faces: a ticked box while on, an empty one while off (the button's label names it)
SWITCH_ICONS = {True: ":material/check_box:", False: ":material/check_box_outline_blank:"}


def switch(label: str, key: str, on: bool, flip: Callable[[bool], None], help: str | None = None,
           disabled: bool = False, place=None) -> bool:
    """kvlab's on/off choice: a button under widget key ``key`` whose box is ticked while ``on`` and
    whose click hands the other value to ``flip`` (before the rerun it starts); ``on`` lives wherever
    the caller keeps it. Returns ``on``. Drawn in ``place`` (a container, a column, the sidebar;
    else where the script is). Decided over ``st.toggle``, whose script files (the checkbox's, nine
    of them) were fetched by every first view that showed one: a lesson link's first view came 0.07×
    the floor sooner without them (docs/performance.md), while buttons are on every page anyway."""
    (place or st).button(md_escape(label), key=key, icon=SWITCH_ICONS[bool(on)], help=help, disabled=disabled,
                         on_click=lambda: flip(not on))
    return on


def held_switch(label: str, key: str, default: bool, help: str | None = None, disabled: bool = False,
                place=None) -> bool:
    """A :func:`switch` (widget key ``{key}_switch``) whose value is kept in the session under ``key``
    (``default`` until it has one), so it survives a page or a tab that does not draw it; returns it."""
    return switch(label, f"{key}_switch", st.session_state.setdefault(key, default),
                  lambda on: st.session_state.__setitem__(key, on), help=help, disabled=disabled, place=place)


def whole_switch(key: str, help: str, window: Window) -> bool:
    """A lesson's Whole switch (every row and key, or only those around the focus), off at first;
    whether it is on lives under ``key``, so it survives a tab or a page that does not draw it. Off
    limits, saying why, while ``window`` (the one shown) would look the same either way: a control that
    changes nothing is not offered."""
    shows_more = window.whole_shows_more
    return held_switch("Whole", key, False, help=help if shows_more else WHOLE_ALL_SHOWN, disabled=not shows_more)


def lesson_tables(frame: LessonFrame, heads: list[str]) -> None:
    """A lesson screen's figures as tables: the accessible alternative to the heatmaps and bars."""
    for title, table in frame_tables(frame, heads):
        st.markdown(f"**{md_escape(title)}**")
        st.dataframe(table, hide_index=True, width="stretch")


def lesson_screen(frame: LessonFrame, heads: list[str], head: int, *, newest_key: bool = False,
                  turns: tuple[tuple[LessonFrame | None, str], ...] = (), beside: dict[int, dict] | None = None,
                  steps: list[dict] = ()) -> None:
    """The figures of a lesson screen side by side (stacked in this order on a phone): the attention
    window, the keys and values under it, the next word. A window that fits is drawn by the light
    board; a larger one (the whole matrix of a long sequence) by Plotly, which zooms and pans.
    ``newest_key``: outline the key each decode step writes (on every frame after prefill).
    ``beside``: a board spec in the next word's place, by the step of the frame it stands beside.

    ``turns`` are the frames a control shows next, as (frame or None, the button's key): the board
    gets them now and draws one the moment its button is clicked (a lesson key clicks it too); the
    rerun the click starts then brings the same frame. ``steps``: the step bar a phone shows over the
    attention board (:func:`viz.ui.board.step_bar`), when a board draws it, so a phone's Step and the
    figure it changes share one screen whatever stands above them."""
    def specs(f: LessonFrame) -> list[dict]:
        newest = newest_key and f.step > 0
        return [attention_board(f, heads[head], newest_key=newest), cache_board(f, heads), third(f)]

    def third(f: LessonFrame) -> dict:
        return (beside or {}).get(f.step) or words_board(f)

    small = fits(frame)
    shown = specs(frame) if small else [None, None, third(frame)]
    # turns only where every figure is a board (a click would otherwise redraw only part of the screen)
    ahead = [(specs(f), button_selector(button)) for f, button in turns if small and f is not None and fits(f)]
    newest = newest_key and frame.step > 0
    figures = (lambda: attention_figure(frame, heads[head], newest_key=newest), lambda: cache_figure(frame, heads))
    shares = (1.3, 1, 0.7)
    for i, column in enumerate(st.columns(shares)):
        key = ("lesson_attention", "lesson_cache", "lesson_words")[i]
        with column:
            if shown[i] is None:
                plot(figures[i](), key=key, share=shares[i] / sum(shares))
            else:
                board(shown[i], key=key, turns=[{"selector": selector, "spec": spec[i]} for spec, selector in ahead],
                      steps=steps if i == 0 else ())


SHOW = "Show"  # the label of a page's sections picker (Serving's too)


def section_picker(labels: tuple[str, ...], key: str) -> str:
    """A page's sections picker: a segmented control named "Show" whose choice (kept under ``key``,
    the first section until there is one) reruns; returns it. Every section's name stays in view: on a
    phone the options wrap, where a row of tabs scrolled the last ones out of sight."""
    if st.session_state.get(key) not in labels:  # first run, or a section this page no longer has
        st.session_state[key] = labels[0]
    return st.segmented_control(SHOW, labels, key=key, required=True)


def sections(labels: tuple[str, ...], key: str, bodies: tuple[Callable[[], None], ...]) -> None:
    """A page's sections, one shown at a time: the :func:`section_picker`, then the chosen section's
    body, the only one computed and sent."""
    bodies[labels.index(section_picker(labels, key))]()


# Presenter mode's first line, one element (one gap above the lesson, not two), kvlab's own: the
# title as the page's h1 for screen readers (the visually-hidden pattern; the folded sidebar hides the
# page's name), the page's name in bold opening the page's one sentence at caption size (0.875 rem: 16 px
# at 1280 × 720) in full contrast, on the same line (no height of its own), and at its right how the
# folded sidebar opens again (instead of a toast, which covered the narration); on a narrow screen the
# hint wraps under it.
PRESENTER_LEAD = ('<h1 style="position: absolute; width: 1px; height: 1px; margin: 0; padding: 0; '
                  'overflow: hidden; clip-path: inset(50%); white-space: nowrap">{title}</h1>'
                  '<div style="display: flex; flex-wrap: wrap; justify-content: space-between; column-gap: 1.5em">'
                  '<p style="{line}"><strong aria-hidden="true">{name}</strong><span aria-hidden="true"> · </span>'
                  '<span>{sentence}</span></p><p style="{line}; opacity: 0.7">{hint}</p></div>')
LEAD_LINE = "margin: 0; font-size: 0.875rem; line-height: 1.3"


def lesson_header(title: str, caption: str, name: str | None = None) -> None:
    """A page's title and its one sentence (plain text, the app's own); in presenter mode the title is
    the h1 for screen readers, the page's ``name`` (its title unless shorter words are given) opens the
    sentence in bold, and the sentence shares one line with the hint that says how the folded sidebar
    opens again, so the lesson below fits one projector screen."""
    if not state.presenter():
        header(title, caption)
        return
    st.html(PRESENTER_LEAD.format(title=html.escape(title), name=html.escape(name or title),
                                  sentence=html.escape(caption), hint=html.escape(PRESENTER_HINT), line=LEAD_LINE))
