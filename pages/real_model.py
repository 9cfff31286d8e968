"""Real model: a small trained transformer beside the toy, with its real attention and KV cache."""

import streamlit as st

from viz.figures import real as figs
from viz.figures.base import Stat
from viz.core.real import words
from viz.core.real.model import (LLAMA_DIR, MAX_PROMPT_CHARS, SHIPPED_DIR, DecodeSession, Prompt, RealModel,
                                 RealModelError, check_sampling, compare_cache, encode, load_model)
from viz.core.real.folder import folders_allowed
from viz.core.real.view import real_view
from viz.core.engine.scenario import STRATEGIES, Sampling
from viz.ui import state
from viz.ui.board import BACK_KEYS_HELP, STEP_KEYS_HELP, lesson_keys
from viz.ui.common import LESSON_SHARE, SIDE_SHARE, defined_caption, for_developers, md_escape, page_lead, plot
from viz.ui.widgets import stats, table

state.require_frame()
REAL_CHOICE = "real_choice"  # which shipped model
REAL_PATH = "real_path"  # the model-directory field
REAL_GOOD_PATH = "real_good_path"  # the last directory that loaded
REAL_PROMPT = "real_prompt"
REAL_GOOD_PROMPT = "real_good_prompt"  # the last prompt that encoded
REAL_SESSION = "real_session"  # this user's DecodeSession (prefill, cache, tokens so far)
REAL_COMPARE = "real_compare"  # (settings key, CacheComparison) of the last cache-vs-no-cache run
REAL_LAYERS = "real_layers"
REAL_LAYER = "real_layer"
REAL_HEAD = "real_head"
REAL_TOP_K = "real_top_k"
REAL_STRATEGY = "real_strategy"
REAL_TEMPERATURE = "real_temperature"
REAL_SAMPLE_TOP_K = "real_sample_top_k"
REAL_TOP_P = "real_top_p"
REAL_SEED = "real_seed"
REAL_CACHE_LAYER = "real_cache_layer"
REAL_COMPARE_STEPS = "real_compare_steps"
REAL_NEXT, REAL_BACK = "real_next_token", "real_back_token"  # the decode step's buttons: the lesson's keys press them
REAL_RULE = "real_custom_rule"
REAL_MATCH_HEAD = "real_match_head"
REAL_ADDED = "real_added"  # the message to show after a rule was added to the toy
DEFAULT_PROMPT = 'The "return" statement leaves the current function call with the expression list'
SHIPPED = {"GPT-2: every query head has its own K/V head": SHIPPED_DIR,
           "Llama: 8 query heads share 2 K/V heads (GQA)": LLAMA_DIR}


@st.cache_resource(show_spinner="Loading the model…", max_entries=4)
def shared_model(path: str):
    """Weights are read-only: one copy per directory, shared by every session."""
    return load_model(path or None)


def _step(session: DecodeSession, tokens: int, settings: Sampling) -> None:
    """The decode step's buttons (callbacks: the session moves before the page is laid out)."""
    for _ in range(min(tokens, session.room)):
        session.step(settings)


def _back(session: DecodeSession) -> None:
    if session.generated:
        session.back()


def _reset(real: RealModel, prompt: Prompt, seed: int) -> None:
    st.session_state[REAL_SESSION] = DecodeSession(real, prompt, seed)


page_lead("real_model")
terms: set[str] = set()  # the glossary terms defined under a figure so far (each once)
lesson = st.container()  # the tabs with the lesson figure first; the model and the prompt below them

choice = st.segmented_control("Model", list(SHIPPED), default=list(SHIPPED)[0], key=REAL_CHOICE, required=True,
                              help=words.MODEL_HELP)
shipped = str(SHIPPED[choice])
developers = for_developers()  # how the models were trained; another model from a folder
if not folders_allowed():  # the default: visitors never name folders on the server's disk
    path = ""
else:  # turned on by whoever runs kvlab (KVLAB_MODEL_FOLDERS=1): folded away, a student starts with the shipped models
    with developers:
        path = st.text_input("Model directory", key=REAL_PATH, placeholder="empty: the shipped model chosen above",
                             help=words.FOLDER_HELP).strip()
try:
    real = shared_model(path or shipped)
    st.session_state[REAL_GOOD_PATH] = path
except RealModelError as err:
    st.error(md_escape(str(err)), icon=":material/error:")
    real = shared_model(st.session_state.get(REAL_GOOD_PATH, "") or shipped)
    st.caption(words.still_model(md_escape(real.name)))

about = st.container()  # the model's facts, once the view has them
text = st.text_area("Prompt", value=DEFAULT_PROMPT, key=REAL_PROMPT, max_chars=MAX_PROMPT_CHARS, height=80)
try:
    prompt = encode(real, text)
    st.session_state[REAL_GOOD_PROMPT] = text
except RealModelError as err:
    st.error(md_escape(str(err)), icon=":material/error:")
    prompt = encode(real, st.session_state.get(REAL_GOOD_PROMPT, DEFAULT_PROMPT))
    st.caption(words.STILL_PROMPT)

run_key = (str(real.path), prompt.ids)
session = st.session_state.get(REAL_SESSION)
if session is None or (str(session.real.path), session.prompt.ids) != run_key:
    session = DecodeSession(real, prompt, st.session_state.get(REAL_SEED, 0))
    st.session_state[REAL_SESSION] = session
# every number and sentence of the tabs, worked out once (the decode buttons moved the session already;
# the rules tab's own rule is in the session before its field is drawn)
view = real_view(session, st.session_state.get(REAL_RULE, "").strip(),
                 tuple((name, shared_model(str(folder))) for name, folder in SHIPPED.items()) if real.shipped else ())
s, pre = view.shape, view.prefill
about.markdown(words.facts(s, real.name, view.model_class, view.device, md_escape))
if view.report:
    developers.caption(words.training(view.report, md_escape))

prefill_tab, decode_tab, heads_tab, compare_tab, rules_tab = lesson.tabs(
    ["Prefill", "Decode with the KV cache", "K/V heads", "Cache vs no cache", "Heads that look like rules"])

with prefill_tab:
    layer_choices = list(range(s.layers))
    shown = layer_choices
    side, picture = st.columns([SIDE_SHARE, LESSON_SHARE])  # the two pickers beside the figure they drive
    layer = side.selectbox("Layer", layer_choices, key=REAL_LAYER, format_func=lambda i: f"layer {i}")
    head = side.selectbox("Head", list(range(s.heads)), key=REAL_HEAD, format_func=lambda i: f"head {i}")
    side.markdown(view.prompt_note)
    with picture:  # one head whole first (the lesson figure), every head below it
        plot(figs.attention_detail(pre.attentions, list(prompt.pieces), layer, head, height=figs.DETAIL_PX),
             key="real_detail", terms=terms, share=LESSON_SHARE)
    with st.expander("The prompt's tokens, one by one", icon=":material/table:"):
        table(figs.pieces_table(prompt), words.PIECES_TABLE, key="real_pieces_table")
    if s.layers > 6:
        shown = st.multiselect("Layers in the grid", layer_choices, default=layer_choices[:4],
                               key=REAL_LAYERS, format_func=lambda i: f"layer {i}") or layer_choices[:1]
    plot(figs.attention_grid(pre.attentions, shown, (layer, head)), key="real_grid", terms=terms)
    k = st.slider("Top-k next tokens", 3, 25, 10, key=REAL_TOP_K)
    plot(figs.top_k_figure(view.prefill_top(k), prompt.pieces[-1]), key="real_topk")

with decode_tab:  # the step control, the narration and the cache it grows first; the rest below
    st.markdown(words.DECODE_LEAD)
    step_row = st.container(horizontal=True, vertical_alignment="bottom")  # wraps instead of cutting labels short
    side, picture = st.columns([SIDE_SHARE, LESSON_SHARE])  # the narration beside the cache it narrates
    below = st.container()
    with below.expander(words.SAMPLING, icon=":material/tune:"):  # read before the buttons, drawn below them
        a, b, c, d, e = st.columns(5)
        strategy = a.selectbox("Strategy", STRATEGIES, key=REAL_STRATEGY)
        temperature = b.slider("Temperature", 0.1, 2.0, 1.0, 0.1, key=REAL_TEMPERATURE,
                               disabled=strategy == "greedy")
        sample_top_k = c.number_input("Top-k (0 = all)", 0, s.vocab, 50, key=REAL_SAMPLE_TOP_K,
                                      disabled=strategy == "greedy")
        top_p = d.slider("Top-p", 0.05, 1.0, 0.95, 0.05, key=REAL_TOP_P, disabled=strategy == "greedy")
        seed = e.number_input("Seed", 0, 2**31 - 1, 0, key=REAL_SEED, help=words.SEED_HELP)
    settings = check_sampling(Sampling(strategy, temperature, int(sample_top_k), top_p, int(seed)))
    with step_row:
        st.button("Back", icon=":material/undo:", disabled=not view.generated, key=REAL_BACK,
                  help=words.back_help(BACK_KEYS_HELP), on_click=_back, args=(session,))
        st.button(words.STEP, icon=":material/skip_next:", disabled=not view.can_step, key=REAL_NEXT,
                  type="primary", help=words.next_help(STEP_KEYS_HELP), on_click=_step, args=(session, 1, settings))
        st.button("10 tokens", icon=":material/fast_forward:", disabled=not view.can_step, on_click=_step,
                  args=(session, 10, settings))
        st.button("Reset to the prompt", icon=":material/restart_alt:", on_click=_reset, args=(real, prompt, int(seed)))
        lesson_keys(REAL_NEXT, REAL_BACK)  # → PageDown Space: Step; ← PageUp: Back (draws nothing)
        cache_layer = st.selectbox("Layer to picture", layer_choices, key=REAL_CACHE_LAYER, width=140,
                                   format_func=lambda i: f"layer {i}", label_visibility="collapsed",
                                   help=words.LAYER_HELP)
    snap = view.snapshot
    side.info(md_escape(view.narration), icon=":material/record_voice_over:")
    with picture:
        plot(figs.key_norms_figure(snap, cache_layer, list(view.pieces), height=figs.CACHE_PX,
                                   appended=view.appended), key="real_norms", share=LESSON_SHARE)
    with below:
        st.code(view.transcript, language=None, wrap_lines=True)
        stats([Stat("Tokens generated", view.generated), Stat("Tokens in the cache", snap.seq_len),
               Stat("Cache bytes (measured)", snap.total_bytes),
               Stat("Formula", snap.formula_bytes, delta=view.formula_delta, good=None)],
              "The real cache after this step", key="real_cache_stats")
        st.caption(view.cache_note)
        with for_developers():
            st.caption(words.DECODE_CACHE)
            defined_caption(words.ALLOCATOR_NOTE)
        plot(figs.cache_growth_figure(list(view.growth)), key="real_growth")
        table(figs.cache_table(snap), words.LAYER_TABLE, key="real_cache_table")  # wraps to fit its column
        plot(figs.top_k_figure(list(view.next_tokens), view.pieces[-1],
                               chosen=0 if strategy == "greedy" else None), key="real_next")

with heads_tab:
    st.markdown(view.gqa_lead)
    plot(figs.gqa_figure(s.heads, s.kv_heads), key="real_gqa")
    st.markdown(view.gqa_intro)
    stats([Stat(figure.label, figure.value, help=figure.help) for figure in view.gqa_stats],
          "Cache per token with grouped K/V heads", key="real_gqa_stats")
    if view.shipped:
        st.markdown(words.SHIPPED_TITLE)
        table(figs.shipped_cache_table(list(view.shipped)), words.SHIPPED_TABLE, key="real_shipped_table")

with compare_tab:  # the run's control beside the speed it measured; the numbers below
    st.markdown(words.COMPARE_LEAD)
    if not view.compare_max:
        st.info(words.CONTEXT_FULL)
    else:
        side, picture = st.columns([SIDE_SHARE, LESSON_SHARE])
        n_steps = side.slider("Tokens to generate", 2, view.compare_max, view.compare_default, key=REAL_COMPARE_STEPS)
        compare_key = (run_key, n_steps, settings)
        if side.button("Run both ways", icon=":material/compare_arrows:", type="primary"):
            with st.spinner("Generating with and without the cache…"):
                result = compare_cache(real, prompt.ids, n_steps, settings, repeats=3)
                st.session_state[REAL_COMPARE] = (compare_key, result)
        stored = st.session_state.get(REAL_COMPARE)
        if stored is None or stored[0] != compare_key:
            picture.caption(words.PRESS_TO_MEASURE)
        else:
            result = stored[1]
            with picture:
                plot(figs.speed_figure(result), key="real_speed", share=LESSON_SHARE)
            stats([Stat("max |logit difference|", words.logit_difference(result)),
                   Stat("Same tokens", result.same_tokens),
                   Stat("With cache", words.tokens_per_s(result.cached_tokens_per_s)),
                   Stat("Without", words.tokens_per_s(result.uncached_tokens_per_s), good=None,
                        delta=words.faster(result))],
                  "With the cache against without", key="real_compare_stats")
            if not result.same_tokens:
                st.warning(words.TOKENS_DIFFER)
            plot(figs.diff_figure(result), key="real_diff")
            st.caption(words.TIMING_NOTE)

with rules_tab:  # the chosen head against its rule first; every head's score, the table and how it is scored below
    st.markdown(words.RULES_LEAD)
    if view.matches is None:
        st.info(words.SHORT_PROMPT)
    else:
        side, picture = st.columns([SIDE_SHARE, LESSON_SHARE])
        if view.rule_error:
            side.error(words.rule_refused(md_escape(view.rule_error)), icon=":material/error:")
        options = view.head_options()
        if st.session_state.get(REAL_MATCH_HEAD) not in options:
            st.session_state[REAL_MATCH_HEAD] = view.matches.best_head().label
        chosen = side.selectbox("Real head", list(options), key=REAL_MATCH_HEAD, format_func=options.get,
                                help=words.HEAD_PICK_HELP)
        if view.beats_chance:
            side.markdown(view.chance_line)
        else:
            side.info(view.chance_line, icon=":material/info:")
        match, rule = view.head_match(chosen)
        with picture:
            plot(figs.head_vs_rule_figure(pre.attentions, view.matches, match.layer, match.head, list(prompt.pieces)),
                 key="real_vs_rule", share=LESSON_SHARE)
        # the rule's one click under the pair, its label whole
        if st.button(words.add_label(md_escape(rule.name), md_escape(rule.rule)), icon=":material/add:",
                     type="primary"):
            st.session_state[REAL_ADDED] = words.added(rule.name, rule.rule, match)
            state.add_head(rule.name, rule.rule)
            st.session_state.pop(REAL_ADDED, None)
            st.error(md_escape(state.error("heads") or words.NOT_ADDED), icon=":material/error:")
        added = st.session_state.pop(REAL_ADDED, None)
        if added:
            st.success(md_escape(added), icon=":material/check:")
            st.page_link("pages/prefill.py", label="See it in the toy's Prefill page",
                         icon=":material/arrow_forward:")
        plot(figs.scores_figure(view.matches, chosen), key="real_scores")
        table(figs.matches_table(view.matches), words.MATCHES_TABLE, key="real_matches_table")
    st.markdown(words.RULES_INTRO)
    st.text_input("Also try your own rule (optional)", key=REAL_RULE, placeholder="e.g. q.pos - k.pos < 3",
                  max_chars=200)  # the view has read it already
