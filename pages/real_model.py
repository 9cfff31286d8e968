"""Real model: a small trained transformer beside the toy, with its real attention and KV cache."""

import streamlit as st

from viz.figures import real as figs
from viz.figures.base import Stat
from viz.core.real.model import (LLAMA_DIR, MAX_PROMPT_CHARS, SHIPPED_DIR, DecodeSession, RealModelError,
                                 check_sampling, compare_cache, encode, load_model, measure_cache, piece,
                                 training_report)
from viz.core.real.folder import folders_allowed
from viz.core.real.narration import narrate_session
from viz.core.real.rules_match import TOY_RULES, match_heads
from viz.core.rules.language import RuleError
from viz.core.engine.scenario import STRATEGIES, Head, Sampling
from viz.ui import state
from viz.ui.board import BACK_KEYS_HELP, STEP_KEYS_HELP, lesson_keys
from viz.ui.common import LESSON_SHARE, SIDE_SHARE, for_developers, md_escape, page_lead, plot
from viz.ui.widgets import stats

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


page_lead("real_model")
terms: set[str] = set()  # the glossary terms defined under a figure so far (each once)
lesson = st.container()  # the tabs with the lesson figure first; the model and the prompt below them

choice = st.segmented_control("Model", list(SHIPPED), default=list(SHIPPED)[0], key=REAL_CHOICE, required=True,
                              help="Both read the same tokens (one shared tokenizer), at the same width and depth.")
shipped = str(SHIPPED[choice])
developers = for_developers()  # how the models were trained; another model from a folder
if not folders_allowed():  # the default: visitors never name folders on the server's disk
    path = ""
else:  # turned on by whoever runs kvlab (KVLAB_MODEL_FOLDERS=1): folded away, a student starts with the shipped models
    with developers:
        path = st.text_input("Model directory", key=REAL_PATH, placeholder="empty: the shipped model chosen above",
                             help="Any local Hugging Face causal-LM folder (config.json, *.safetensors, tokenizer "
                                  "files). Nothing is downloaded.").strip()
try:
    real = shared_model(path or shipped)
    st.session_state[REAL_GOOD_PATH] = path
except RealModelError as err:
    st.error(md_escape(str(err)), icon=":material/error:")
    real = shared_model(st.session_state.get(REAL_GOOD_PATH, "") or shipped)
    st.caption(f"Still showing {md_escape(real.name)}.")

s = real.shape
report = training_report(real)
facts = (f"**{md_escape(real.name)}** · {md_escape(type(real.model).__name__)} · {s.parameters:,} parameters · "
         f"{s.layers} layers × {s.heads} heads ({s.kv_heads} key/value heads) · head_dim {s.head_dim} · "
         f"vocabulary {s.vocab:,} · context {s.max_positions} tokens · on {md_escape(str(real.device))}")
st.markdown(facts)
if report:
    developers.caption(f"Trained by {md_escape(report['command'])} on {md_escape(report['data']['source'])} "
               f"({report['data']['train_tokens']:,} tokens); final loss {report['final_train_loss']:.2f} "
               f"(training) / {report['final_val_loss']:.2f} (held-out documents), with "
               f"{report['cpu_seconds'] / 60:.0f} CPU-minutes.")

text = st.text_area("Prompt", value=DEFAULT_PROMPT, key=REAL_PROMPT, max_chars=MAX_PROMPT_CHARS, height=80)
try:
    prompt = encode(real, text)
    st.session_state[REAL_GOOD_PROMPT] = text
except RealModelError as err:
    st.error(md_escape(str(err)), icon=":material/error:")
    prompt = encode(real, st.session_state.get(REAL_GOOD_PROMPT, DEFAULT_PROMPT))
    st.caption("Still showing the last prompt that worked.")

run_key = (str(real.path), prompt.ids)
session = st.session_state.get(REAL_SESSION)
if session is None or (str(session.real.path), session.prompt.ids) != run_key:
    session = DecodeSession(real, prompt, st.session_state.get(REAL_SEED, 0))
    st.session_state[REAL_SESSION] = session
pre = session.prefill
pieces = list(prompt.pieces)

prefill_tab, decode_tab, heads_tab, compare_tab, rules_tab = lesson.tabs(
    ["Prefill", "Decode with the KV cache", "K/V heads", "Cache vs no cache", "Heads that look like rules"])

with prefill_tab:
    layer_choices = list(range(s.layers))
    shown = layer_choices
    side, picture = st.columns([SIDE_SHARE, LESSON_SHARE])  # the two pickers beside the figure they drive
    layer = side.selectbox("Layer", layer_choices, key=REAL_LAYER, format_func=lambda i: f"layer {i}")
    head = side.selectbox("Head", list(range(s.heads)), key=REAL_HEAD, format_func=lambda i: f"head {i}")
    side.markdown(f"The prompt is **{len(prompt)} tokens**: subword pieces from a byte-level BPE "
                  "tokenizer (␣ marks a space, ↵ a new line). One pass over all of them fills the cache "
                  "and gives every head's attention. The model and the prompt are under the tabs.")
    with picture:  # one head whole first (the lesson figure), every head below it
        plot(figs.attention_detail(pre.attentions, pieces, layer, head, height=figs.DETAIL_PX), key="real_detail",
             terms=terms, share=LESSON_SHARE)
    with st.expander("The prompt's tokens, one by one", icon=":material/table:"):
        st.dataframe(figs.pieces_table(prompt), width="stretch")
    if s.layers > 6:
        shown = st.multiselect("Layers in the grid", layer_choices, default=layer_choices[:4],
                               key=REAL_LAYERS, format_func=lambda i: f"layer {i}") or layer_choices[:1]
    plot(figs.attention_grid(pre.attentions, shown, (layer, head)), key="real_grid", terms=terms)
    k = st.slider("Top-k next tokens", 3, 25, 10, key=REAL_TOP_K)
    top = pre.prediction.top_k(k)
    plot(figs.top_k_figure([(piece(real, i), p) for i, p in top], pieces[-1]), key="real_topk")

with decode_tab:
    st.markdown("Each step feeds **only the new token**; the model appends its key and value to every "
                "layer's cache (a transformers `DynamicCache`, built from the model's config as `generate()` "
                "builds it) and attends over everything cached.")
    a, b, c, d, e = st.columns(5)
    strategy = a.selectbox("Strategy", STRATEGIES, key=REAL_STRATEGY)
    temperature = b.slider("Temperature", 0.1, 2.0, 1.0, 0.1, key=REAL_TEMPERATURE,
                           disabled=strategy == "greedy")
    sample_top_k = c.number_input("Top-k (0 = all)", 0, s.vocab, 50, key=REAL_SAMPLE_TOP_K,
                                  disabled=strategy == "greedy")
    top_p = d.slider("Top-p", 0.05, 1.0, 0.95, 0.05, key=REAL_TOP_P, disabled=strategy == "greedy")
    seed = e.number_input("Seed", 0, 2**31 - 1, 0, key=REAL_SEED, help="Used from the next reset.")
    settings = check_sampling(Sampling(strategy, temperature, int(sample_top_k), top_p, int(seed)))
    steps = 0
    with st.container(horizontal=True):  # wraps instead of cutting labels short
        if st.button("Back", icon=":material/undo:", disabled=not session.generated, key=REAL_BACK,
                     help=f"Undo the last token: every layer's cache drops its last key and value ({BACK_KEYS_HELP})."):
            session.back()
        if st.button("Next token", icon=":material/skip_next:", disabled=session.room < 1, key=REAL_NEXT,
                     type="primary", help=f"Pick one token and feed only it ({STEP_KEYS_HELP})"):
            steps = 1
        if st.button("10 tokens", icon=":material/fast_forward:", disabled=session.room < 1):
            steps = min(10, session.room)
        if st.button("Reset to the prompt", icon=":material/restart_alt:"):
            session = DecodeSession(real, prompt, int(seed))
            st.session_state[REAL_SESSION] = session
        lesson_keys(REAL_NEXT, REAL_BACK)  # → PageDown Space: Next token; ← PageUp: Back (draws nothing)
    for _ in range(steps):
        session.step(settings)
    st.info(md_escape(narrate_session(session)), icon=":material/record_voice_over:")
    st.code(session.transcript, language=None, wrap_lines=True)
    snap = session.snapshot()
    stats([Stat("Tokens generated", len(session.generated)), Stat("Tokens in the cache", snap.seq_len),
           Stat("Cache bytes (measured)", snap.total_bytes),
           Stat("Formula", snap.formula_bytes, delta="equal" if snap.matches_formula else "different", good=None)],
          "The real cache after this step", key="real_cache_stats")
    st.caption(f"{snap.formula} = {snap.formula_bytes:,} bytes. Measured: the storage behind every layer's K and "
               f"V tensors, read from the cache itself{' — the same' if snap.matches_formula else ''}. "
               + ("" if snap.matches_formula else
                  f"Their shapes say {snap.held_bytes:,} bytes: a sliding-window layer keeps a view of its last "
                  "tokens over the tensor its last step made, which right after a long prompt still holds the "
                  "whole prompt. ")
               )
    with for_developers():
        st.caption("The allocator reserves more than this: each step makes new K and V tensors one token longer "
                   "and frees the old ones, and PyTorch's CUDA allocator rounds blocks up and keeps freed ones.")
    left, right = st.columns([2, 3])
    with left:
        st.dataframe(figs.cache_table(snap), hide_index=True, width="stretch")
        plot(figs.cache_growth_figure(session.history), key="real_growth")
    with right:
        cache_layer = st.selectbox("Layer to picture", layer_choices, key=REAL_CACHE_LAYER,
                                   format_func=lambda i: f"layer {i}")
        plot(figs.key_norms_figure(snap, cache_layer, session.pieces), key="real_norms")
    nxt = session.prediction.top_k(10)
    plot(figs.top_k_figure([(piece(real, i), p) for i, p in nxt], session.pieces[-1],
                           chosen=0 if strategy == "greedy" else None), key="real_next")

with heads_tab:
    st.markdown(f"Each of the {s.heads} query heads scores its own queries, but the keys and values it reads "
                f"come from a **K/V head** it may share: the cache stores only the {s.kv_heads} K/V heads. "
                "Grouped-query attention (GQA) shares each K/V head among a group of query heads, so the cache "
                "shrinks by the group size while every query head still has its own attention.")
    plot(figs.gqa_figure(s.heads, s.kv_heads), key="real_gqa")
    now = session.snapshot()
    stats([Stat("Cache per token (measured)", f"{now.bytes_per_token:,.0f} B",
                help="The storage of every layer's K and V tensors, divided by the tokens in the cache."),
           Stat("With a K/V head per query head", f"{now.mha_bytes_per_token:,.0f} B",
                help="The formula with as many K/V heads as query heads."),
           Stat("Smaller by", f"{s.group}×", help="Query heads per K/V head.")],
          "Cache per token with grouped K/V heads", key="real_gqa_stats")
    if real.shipped:
        measured = [(name, shared_model(str(folder))) for name, folder in SHIPPED.items()]
        st.markdown("**Both shipped models, measured on this prompt** (same tokenizer, same width and depth)")
        st.dataframe(figs.shipped_cache_table([(name, other, measure_cache(other, prompt.ids))
                                               for name, other in measured]), hide_index=True, width="stretch")

with compare_tab:
    st.markdown("The same generation twice, in lockstep: **with the cache** (feed one token) and "
                "**without** (feed the whole sequence every step). The logits must agree to rounding "
                "error and the tokens must be the same; only the time differs.")
    room = s.room(len(prompt))
    if room < 2:
        st.info("The prompt fills the model's context; shorten it to compare.")
    else:
        n_steps = st.slider("Tokens to generate", 2, min(128, room), min(48, room), key=REAL_COMPARE_STEPS)
        compare_key = (run_key, n_steps, settings)
        if st.button("Run both ways", icon=":material/compare_arrows:", type="primary"):
            with st.spinner("Generating with and without the cache…"):
                result = compare_cache(real, prompt.ids, n_steps, settings, repeats=3)
                st.session_state[REAL_COMPARE] = (compare_key, result)
        stored = st.session_state.get(REAL_COMPARE)
        if stored is None or stored[0] != compare_key:
            st.caption("Press the button to measure on this machine.")
        else:
            result = stored[1]
            stats([Stat("max |logit difference|", f"{result.overall_max_abs_diff:.1e}"),
                   Stat("Same tokens", result.same_tokens),
                   Stat("With cache", f"{result.cached_tokens_per_s:,.0f} tok/s"),
                   Stat("Without", f"{result.uncached_tokens_per_s:,.0f} tok/s", good=None,
                        delta=f"cache is {result.speedup:.1f}× faster")],
                  "With the cache against without", key="real_compare_stats")
            if not result.same_tokens:
                st.warning("The two runs chose different tokens: two logits were within rounding error of "
                           "each other. Logits are compared up to the first difference.")
            plot(figs.speed_figure(result), key="real_speed")
            plot(figs.diff_figure(result), key="real_diff")
            st.caption("Each point is one decode step, the median of 3 timings. Without a cache the step "
                       "re-runs the whole sequence, so it slows as the sequence grows; with the cache it only "
                       "adds one token. On a model this small, fixed per-step overhead hides part of the gap.")

with rules_tab:
    st.markdown("Each real head's prefill attention is compared, row by row, with the attention the toy "
                "engine computes for a rule over the same tokens. A row scores the overlap of the two "
                "distributions (1 = identical); a head's score is the mean over rows 2…n. The toy's "
                "rules are sharp; a small, briefly trained model like the shipped one mostly spreads its "
                "attention, so 'everything' is often its closest rule and scores well below 1 are "
                "common. A larger local model (For developers, under the tabs) compares better.")
    rules = TOY_RULES
    custom = st.text_input("Also try your own rule (optional)", key=REAL_RULE,
                           placeholder="e.g. q.pos - k.pos < 3", max_chars=200).strip()
    if len(prompt) < 2:
        st.info("Matching needs a prompt of at least 2 tokens.")
    else:
        matches = None
        if custom:
            try:
                matches = match_heads(pre.attentions, pieces, rules + (Head("your rule", custom),))
            except RuleError as err:
                st.error(f"Your rule: {md_escape(str(err))}", icon=":material/error:")
        matches = matches or match_heads(pre.attentions, pieces, rules)
        above = matches.above_chance()
        if above:
            st.markdown(f"**{len(above)} of {len(matches.heads)} heads beat chance** on the rule they look most "
                        "like: their score is above what 95% of random heads (softmax of random scores over the "
                        "same tokens) reach on that rule, the last row of the scores below.")
        else:
            st.info(f"No head beats chance: on the rule it looks most like, every one of the {len(matches.heads)} "
                    "heads scores no higher than random heads (softmax of random scores over the same tokens) do "
                    "on that rule. Matching 'everything' then only says the head spreads its attention.",
                    icon=":material/info:")
        labels = [m.label for m in matches.heads]
        best = matches.best_head()
        if st.session_state.get(REAL_MATCH_HEAD) not in labels:
            st.session_state[REAL_MATCH_HEAD] = best.label
        chosen = st.selectbox("Real head", labels, key=REAL_MATCH_HEAD,
                              format_func=lambda label: f"{label} · looks like "
                              f"'{matches.rules[matches.heads[labels.index(label)].best].name}' "
                              f"({matches.heads[labels.index(label)].score:.2f})")
        match = matches.heads[labels.index(chosen)]
        rule = matches.rules[match.best]
        left, right = st.columns(2)
        with left:
            plot(figs.head_vs_rule_figure(pre.attentions, matches, match.layer, match.head, pieces),
                 key="real_vs_rule")
            if st.button(f"Add '{md_escape(rule.name)}' ({md_escape(rule.rule)}) to the toy scenario",
                         icon=":material/add:",
                         type="primary"):
                st.session_state[REAL_ADDED] = (f"Added a head '{rule.name}' with the rule {rule.rule} "
                                                f"(like {match.label}) to the toy scenario.")
                state.add_head(rule.name, rule.rule)
                st.session_state.pop(REAL_ADDED, None)
                st.error(md_escape(state.error("heads") or "The head could not be added."),
                         icon=":material/error:")
            added = st.session_state.pop(REAL_ADDED, None)
            if added:
                st.success(md_escape(added), icon=":material/check:")
                st.page_link("pages/prefill.py", label="See it in the toy's Prefill page",
                             icon=":material/arrow_forward:")
        with right:
            plot(figs.scores_figure(matches, chosen), key="real_scores")
        st.dataframe(figs.matches_table(matches), hide_index=True, width="stretch")
