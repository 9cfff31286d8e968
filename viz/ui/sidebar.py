"""The shared sidebar: presenter mode's switch, presets, device badge and every scenario editor.

Drawn once by app.py before the page runs, so an edit made here is already in force when the page
computes. Each editor shows its own error right below it; a refused edit never replaces the last
good scenario.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit, urlunsplit

import streamlit as st
import torch

from ..core.device import describe_device, pick_device
from ..core.lessons.words_decode import FIX_HELP
from ..core.engine.presets import VARIED_PAGES, load_preset, matching_preset, preset_names, varied_opening
from ..core.rules.language import RULE_LIBRARY
from ..core.engine.scenario import MAX_D_K, MAX_PROMPT_CHARS, Scenario
from . import state, tables
from .board import BACK_KEYS_HELP, STEP_KEYS_HELP
from .common import folded, md_escape, switch

log = logging.getLogger("kvlab.app")

# The sidebar's one width (px), wide enough for the editors' tables: Streamlit's documented
# st.set_page_config(initial_sidebar_state=<int>), which app.py sends on a session's first run
WIDTH_PX = 400
PRESET = "kv_preset"  # the scenario pills' key (one key for good: a pick keeps the keyboard's focus in it)
UPLOAD_SEEN = "kv_upload_seen"  # file id of the last applied upload, so it is applied once


@st.cache_resource
def _device_label() -> str:
    return describe_device(pick_device())


def _show_error(field: str) -> None:
    message = state.error(field)
    if message:
        st.error(md_escape(message), icon=":material/error:")


def _preset_chosen(name: str) -> None:
    """A pill clicked (a callback: the run that follows draws the new scenario, with no second run)."""
    if name != matching_preset(state.scenario()):
        state.set_scenario(load_preset(name))
        state.set_step(0)


def _preset_picker(url_path: str) -> None:
    """The built-in scenarios as pills, all in view (one click loads one; none is chosen once the
    scenario is edited), the chosen one's title below, and on a page that shows another scenario
    than the one chosen (``url_path``: Memory, Serving on the seed), which it shows."""
    names = preset_names()
    match = matching_preset(state.scenario())
    st.pills("Scenario", names, required=True, **state.bound(PRESET, match, _preset_chosen),
             help="Built-in scenarios. Editing anything below makes it a custom scenario.")
    st.caption(md_escape(load_preset(match).title) if match else "Custom scenario (edited)")
    if url_path in VARIED_PAGES:
        aside = varied_opening(state.scenario(), VARIED_PAGES[url_path]).aside
        if aside:
            st.caption(md_escape(aside))


def _send_prompt(sent: str) -> None:
    """The prompt box's text, sent (a callback: the script that follows draws the outcome). A refused
    prompt is kept, to stay in the box with its message until an edit applies."""
    scenario = state.scenario()
    if sent == (scenario.prompt or ""):  # the prompt in force, sent back: nothing is refused any more
        state.clear_error("prompt")
        return
    if len(sent) <= MAX_PROMPT_CHARS:  # a longer one (not typed: sent by hand) is not kept in the session
        st.session_state[state.PROMPT_REFUSED] = (state.version(), sent)  # read only while refused
    state.try_edit("prompt", lambda: scenario.with_prompt(sent))


PROMPT_HELP = ("Press Enter to apply. Split into word tokens; punctuation is dropped. Each token's value is "
               "under Tokens and values.")


def _prompt(scenario: Scenario) -> None:
    refused = st.session_state.get(state.PROMPT_REFUSED)  # (scenario version, the refused text)
    error = state.error("prompt")
    held = refused[1] if refused and refused[0] == state.version() and error else None
    key = state.widget_key("prompt")  # renewed with the scenario: a refused text stays until an edit applies
    # in the fold of the same name: the label is read to screen readers only, the help shown under it
    st.text_input("Prompt", max_chars=MAX_PROMPT_CHARS, label_visibility="collapsed",
                  **state.bound(key, (scenario.prompt or "") if held is None else held, _send_prompt))
    _show_error("prompt")
    st.caption(PROMPT_HELP)


def _apply(field: str, changed: bool, build: Callable[[], Scenario]) -> None:
    """A table editor's outcome, then its message: an edit that changes what is in force is tried
    (and refused with a message if bad); a table the visitor typed back to what is in force has
    nothing refused any more (as the prompt box, sent the prompt in force). A table drawn afresh
    (its panel folded away and back) keeps the message of the edit it no longer holds."""
    if changed:
        state.update(field, build)
    elif _typed_into(state.widget_key(field)):
        state.clear_error(field)
    _show_error(field)


def _typed_into(key: str) -> bool:
    """Whether the data editor under ``key`` holds edits of the visitor's (equal to what is in force)."""
    edits = st.session_state.get(key) or {}
    return any(edits.get(part) for part in ("edited_rows", "added_rows", "deleted_rows"))


def _edited(field: str) -> None:
    """A table editor's change (a callback): the visitor changed the table, so the run that follows
    judges it afresh (:func:`_apply` refuses it again if it is still bad). This is what clears a
    refusal typed back to the value in force: the browser drops such an edit, leaving none."""
    state.clear_error(field)


def _tokens(scenario: Scenario) -> None:
    base = tables.tokens_frame(scenario)
    edited = st.data_editor(
        base, num_rows="dynamic", width="stretch", key=state.widget_key("tokens"),
        on_change=_edited, args=("tokens",),
        column_config={"token": st.column_config.TextColumn("token", required=True),
                       "value": st.column_config.NumberColumn("value (V)", format="%g", required=True)})
    _apply("tokens", not edited.equals(base), lambda: tables.scenario_from_tokens(scenario, edited))


def _heads(scenario: Scenario) -> None:
    base = tables.heads_frame(scenario)
    edited = st.data_editor(
        base, num_rows="dynamic", width="stretch", key=state.widget_key("heads"),
        on_change=_edited, args=("heads",),
        disabled=["cacheable"],
        column_config={
            # widths that fit the sidebar with every header in full (the cell editor widens to edit)
            "name": st.column_config.TextColumn("name", required=True, max_chars=40, width=64),
            "rule": st.column_config.TextColumn("rule", required=True, width=110,
                                                help="e.g. k.pos % 2 == 0, k.pos == q.pos, True"),
            "cacheable": st.column_config.TextColumn(
                "cacheable", width=94, help="Rules that read n change old keys as the sequence grows, "
                                  "so a KV cache would hold stale keys."),
        })
    _apply("heads", not edited[["name", "rule"]].equals(base[["name", "rule"]]),
           lambda: tables.scenario_from_heads(scenario, edited[["name", "rule"]]))

    names = scenario.head_names
    left, up, down = st.columns([3, 1, 1], vertical_alignment="bottom")
    chosen = left.selectbox("Reorder", range(len(names)), format_func=lambda i: names[i],
                            key=state.widget_key("reorder"))
    if up.button("", icon=":material/arrow_upward:", key=state.widget_key("up"), help="Move up"):
        state.set_scenario(tables.moved_head(scenario, chosen, -1))
        st.rerun()
    if down.button("", icon=":material/arrow_downward:", key=state.widget_key("down"), help="Move down"):
        state.set_scenario(tables.moved_head(scenario, chosen, +1))
        st.rerun()

    pick, add = st.columns([3, 1], vertical_alignment="bottom")
    name = pick.selectbox("Add a head", list(RULE_LIBRARY), key=state.widget_key("library"),
                          format_func=lambda n: f"{n}: {RULE_LIBRARY[n]}")
    if add.button("Add", key=state.widget_key("add_head")):
        state.update("heads", lambda: scenario.with_head_added(name.split(" (")[0], RULE_LIBRARY[name]))
    if not all(value == "yes" for value in base["cacheable"]):
        if st.button("Make every head cache-safe (n → q.pos)", key=state.widget_key("safe"),
                     icon=":material/build:", help=FIX_HELP):
            state.set_scenario(scenario.cache_safe())
            st.rerun()


def _vocab(scenario: Scenario) -> None:
    base = tables.vocab_frame(scenario)
    config = {"token": st.column_config.TextColumn("word", required=True),
              "value": st.column_config.NumberColumn("value", format="%g", required=True)}
    for name in scenario.head_names:
        column = tables.weight_column(name)
        config[column] = st.column_config.NumberColumn(column, format="%g", required=True,
                                                       help=f"W_vocab weight for head '{md_escape(name)}'")
    edited = st.data_editor(base, num_rows="dynamic", width="stretch", key=state.widget_key("vocab"),
                            on_change=_edited, args=("vocab",),
                            column_config=config)
    _apply("vocab", not edited.equals(base), lambda: tables.scenario_from_vocab(scenario, edited))


def _kept(value, shown, original):
    """A widget can only show part of a range: keep the original unless the person moved it."""
    return original if value == shown else value


def _model_and_sampling(scenario: Scenario) -> None:
    s = scenario.sampling
    d_k = st.number_input("d_k (key width)", 1, MAX_D_K, scenario.d_k, key=state.widget_key("d_k"),
                          help="Scores are ±√d_k, so a larger d_k makes attention sharper.")
    strategy = st.radio("Choose the next word by", ["greedy", "sample"], horizontal=True,
                        index=["greedy", "sample"].index(s.strategy), key=state.widget_key("strategy"))
    shown_t = round(min(s.temperature, 5.0), 2)
    temperature = st.slider("Temperature", 0.0, 5.0, shown_t, 0.05, key=state.widget_key("temperature"),
                            help="Probabilities are softmax(logits / T); 0 always takes the top word.")
    top_k = st.number_input("Top-k (0 keeps all)", 0, len(scenario.vocab), s.top_k,
                            key=state.widget_key("top_k"))
    shown_p = round(min(max(s.top_p, 0.05), 1.0), 2)
    top_p = st.slider("Top-p", 0.05, 1.0, shown_p, 0.05, key=state.widget_key("top_p"),
                      help="Keep the most likely words until their probabilities add up to p.")
    shown_seed = min(s.seed, 2**31 - 1)
    seed = st.number_input("Seed", 0, 2**31 - 1, shown_seed, key=state.widget_key("seed"))
    sampling = {"strategy": strategy, "temperature": _kept(temperature, shown_t, s.temperature),
                "top_k": int(top_k), "top_p": _kept(top_p, shown_p, s.top_p),
                "seed": int(_kept(seed, shown_seed, s.seed))}
    current = {"strategy": s.strategy, "temperature": s.temperature, "top_k": s.top_k, "top_p": s.top_p,
               "seed": s.seed}
    if d_k != scenario.d_k or sampling != current:
        state.update("sampling", lambda: Scenario.from_dict({**scenario.to_dict(), "d_k": int(d_k),
                                                              "sampling": sampling}))
    _show_error("sampling")


def _save_and_share(scenario: Scenario) -> None:
    st.download_button("Download scenario (JSON)", scenario.to_json(), file_name="kvlab-scenario.json",
                       mime="application/json", icon=":material/download:", width="stretch")
    upload = st.file_uploader("Open a scenario file", type=["json"], max_upload_size=1,
                              key="kv_upload")
    if upload is not None and st.session_state.get(UPLOAD_SEEN) != upload.file_id:
        st.session_state[UPLOAD_SEEN] = upload.file_id
        data = upload.getvalue()
        def load() -> Scenario:
            new = Scenario.from_json(data)
            state.set_step(0)  # only once the file is known to be good
            return new

        state.update("upload", load)
    _show_error("upload")


OPEN_PANELS = "kv_open_panels"  # the keys of the editor panels the visitor has open
# The editor panels, in order: (session key, label, icon, the field its edits are refused under, body).
PANELS = (("kv_panel_prompt", "Prompt", ":material/edit:", "prompt", _prompt),
          ("kv_panel_tokens", "Tokens and values", ":material/edit_note:", "tokens", _tokens),
          ("kv_panel_heads", "Heads", ":material/visibility:", "heads", _heads),
          ("kv_panel_vocab", "Vocabulary and W_vocab", ":material/dictionary:", "vocab", _vocab),
          ("kv_panel_sampling", "d_k and sampling", ":material/tune:", "sampling", _model_and_sampling),
          ("kv_panel_files", "Save and open", ":material/save:", "upload", _save_and_share))


LINK_SLOT = "kv_share_link_slot"  # (the box's container, the page's path), made by render() while its fold is open
# Whether the Copy link fold is open. The box is built only while it is: st.code brings Streamlit's
# syntax highlighter (about 1.5 MB of script) to whichever view shows one first, a new visitor's
# first view included; the address bar holds the same link all along.
LINK_OPEN = "kv_link_open"


def _draw_link(place, url_path: str) -> None:
    """The link to exactly this view with a copy button, drawn into ``place``; ``url_path`` is the
    page's path ("" for the home page)."""
    parts = urlsplit(st.context.url or "http://localhost/")
    base_path = (st.get_option("server.baseUrlPath") or "").strip("/")
    params = state.link_params(url_path)  # at /, naming its page: a first visit connects at once
    link = urlunsplit((parts.scheme, parts.netloc, f"/{base_path}/" if base_path else "/", urlencode(params), ""))
    st.session_state[state.LINK_DRAWN] = True
    with place:
        st.caption("**Copy link** to exactly this view (the address bar holds it too)" if params
                   else "Link to this page:")
        st.code(link, language=None, wrap_lines=True)  # with Streamlit's copy button


def share_link() -> None:
    """After the page (app.py): the Copy link box, unless the page's fragment drew it in this run.
    Drawn after the page, since the page may have moved its step."""
    held = st.session_state.get(LINK_SLOT)
    if held is not None and not st.session_state.get(state.LINK_DRAWN):
        _draw_link(*held)


def refresh_share_link() -> None:
    """At the end of every run of a page's fragment (its own reruns skip app.py): the Copy link box
    shows the view the fragment moved to. Streamlit lets a fragment fill a container made outside it
    when it fills it on every full run too, as here."""
    held = st.session_state.get(LINK_SLOT)
    if held is None:  # the fold is closed, or the sidebar failed before making the box in this run
        return
    try:
        _draw_link(*held)
    except Exception as err:  # noqa: BLE001 - the box is a convenience: the address bar still holds the link
        # (Streamlit documents no exception type for a container it will not fill; the log says which)
        log.warning("the Copy link box was not refreshed: %s: %s", type(err).__name__, err)
        st.session_state.pop(LINK_SLOT, None)


# true on every page a follower sees: Prefill and Decode also hide their steps and choices, the others keep theirs
FOLLOWING_CAPTION = ("You are following the teacher, whose scenario this page shows: **Explore on my own**, "
                     "above the page, brings the scenario's editors here.")


def render(editors: bool = True, url_path: str = "", following: bool = False) -> None:
    """The whole sidebar, with a place for the Copy link box (in its fold, while open) that
    :func:`share_link` (or the page's fragment) fills once the page has run; ``url_path`` is the
    page's path.

    In presenter mode only the switch, the preset, the badge and the link remain; on a page that
    does not read the scenario (``editors`` False) the preset picker and the editors are left out;
    on a student's screen that follows a teacher's (``following``) they are left out too, and one
    line says where they are."""
    shown = editors and not following  # the scenario's preset picker and editors
    with st.sidebar:
        switch("Presenter mode", state.PRESENTER_TOGGLE, state.presenter(), state.set_presenter,
               help="Large type for a projector; the sidebar folds away (» at the top left opens it); "
               f"{STEP_KEYS_HELP} step, {BACK_KEYS_HELP} step back.")
        if shown:
            _preset_picker(url_path)
        st.badge(f"torch {torch.__version__} · {_device_label()}", icon=":material/memory:", color="gray")
        for notice in state.notices():
            st.warning(f"Share link: {md_escape(notice)}", icon=":material/link_off:")
        fold = st.expander("Copy link", icon=":material/link:", key=LINK_OPEN, on_change="rerun")
        if fold.open:  # folded (as on a first view): no box, and nothing for share_link() to draw
            st.session_state[LINK_SLOT] = (fold.container(key="kv_share_link"), url_path)
        if following and editors:
            st.caption(FOLLOWING_CAPTION)
        elif not editors:
            st.caption("This page does not use the scenario editors; they are on Prefill, Decode, Memory, "
                       "Serving and At scale.")
        if state.presenter() or not shown:
            return
        # each panel builds its widgets only while open: a first view neither sends nor lays out
        # editors nobody opened (the data editors alone load about 1.5 MB of script, the prompt's
        # text box a dozen script files of its own)
        opened = st.session_state.setdefault(OPEN_PANELS, set())
        for key, label, icon, field, body in PANELS:
            # open as the visitor left it (Streamlit forgets a widget a run does not draw: a page
            # without editors, presenter mode), and always while its edit is refused, so the
            # message and the refused text stay in view
            if state.error(field) or (key in opened and key not in st.session_state):
                st.session_state[key] = True
            if folded(label, key, lambda body=body: body(state.scenario()), icon=icon):
                opened.add(key)
            else:
                opened.discard(key)
