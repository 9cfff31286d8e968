"""What the Real model page says: its fixed prose, and the sentences built from the model's numbers.

One place for the page's words, the decode step's narration included. A
sentence that mixes Markdown with text from the model's folder or the visitor (a model's name, a rule)
takes the page's ``escape`` function (``viz.ui.common.md_escape``); the others are plain text or
Markdown written here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .loading import ModelShape, piece
from .model import CacheComparison, CacheSnapshot, DecodeSession
from .rules_match import HeadMatch
from ..text import step_label

Escape = Callable[[str], str]

# -- the model and the prompt ------------------------------------------------------------------
MODEL_HELP = "Both read the same tokens (one shared tokenizer), at the same width and depth."
FOLDER_HELP = ("Any local Hugging Face causal-LM folder (config.json, *.safetensors, tokenizer "
               "files). Nothing is downloaded.")
STILL_PROMPT = "Still showing the last prompt that worked."


def still_model(name: str) -> str:
    """Under a folder that did not load (``name`` escaped by the caller)."""
    return f"Still showing {name}."


def facts(shape: ModelShape, name: str, model_class: str, device: str, escape: Escape) -> str:
    """The model's line above the tabs (Markdown)."""
    s = shape
    return (f"**{escape(name)}** · {escape(model_class)} · {s.parameters:,} parameters · "
            f"{s.layers} layers × {s.heads} heads ({s.kv_heads} key/value heads) · head_dim {s.head_dim} · "
            f"vocabulary {s.vocab:,} · context length up to {s.max_positions} tokens · on {escape(device)}")


def training(report: dict | None, escape: Escape) -> str:
    """How the model was trained, from its training.json ("" without one)."""
    if not report:
        return ""
    return (f"Trained by {escape(report['command'])} on {escape(report['data']['source'])} "
            f"({report['data']['train_tokens']:,} tokens); final loss {report['final_train_loss']:.2f} "
            f"(training) / {report['final_val_loss']:.2f} (held-out documents), with "
            f"{report['cpu_seconds'] / 60:.0f} CPU-minutes.")


# -- prefill -----------------------------------------------------------------------------------
def prompt_note(tokens: int) -> str:
    """Beside the prefill figure: what the prompt became (Markdown)."""
    return (f"The prompt is **{tokens} tokens**: subword pieces from a byte-level BPE "
            "tokenizer (␣ marks a space, ↵ a new line). One pass over all of them fills the cache "
            "and gives every head's attention. The model and the prompt are under the tabs.")


# -- decode with the KV cache ------------------------------------------------------------------
DECODE_LEAD = ("Each step feeds **only the new token**: every layer appends its key and value (the new row) "
               "to its cache.")  # the tab's one sentence, above its figure
DECODE_CACHE = ("The cache is a transformers `DynamicCache`, built from the model's config as `generate()` builds "
                "it; each step attends over everything cached.")
SAMPLING = "Sampling: strategy, temperature, top-k, top-p, seed"  # the fold that holds them
LAYER_HELP = "The layer whose cached keys the figure pictures."
SEED_HELP = "Used from the next reset."
ALLOCATOR_NOTE = ("The allocator reserves more than this: each step makes new K and V tensors one token longer "
                  "and frees the old ones, and PyTorch's CUDA allocator rounds blocks up and keeps freed ones.")


def back_help(keys: str) -> str:
    return f"Undo the last token: every layer's cache drops its last key and value ({keys})."


STEP = step_label()  # the button that feeds one token: one step, named as on every page


def next_help(keys: str) -> str:
    return f"One step: pick one token and feed only it ({keys})"


def formula_delta(snap: CacheSnapshot) -> str:
    """The formula's stat beside the measured bytes: the two agree or not."""
    return "equal" if snap.matches_formula else "different"


def cache_note(snap: CacheSnapshot) -> str:
    """Under the cache's stats: the formula, and what was measured and how."""
    return (f"{snap.formula} = {snap.formula_bytes:,} bytes. Measured: the storage behind every layer's K and "
            f"V tensors, read from the cache itself{' — the same' if snap.matches_formula else ''}. "
            + ("" if snap.matches_formula else
               f"Their shapes say {snap.held_bytes:,} bytes: a sliding-window layer keeps a view of its last "
               "tokens over the tensor its last step made, which right after a long prompt still holds the "
               "whole prompt. "))


# -- K/V heads ---------------------------------------------------------------------------------
PER_TOKEN_HELP = "The storage of every layer's K and V tensors, divided by the tokens in the cache."
MHA_HELP = "The formula with as many K/V heads as query heads."
GROUP_HELP = "Query heads per K/V head."
SHIPPED_TITLE = "**Both shipped models, measured on this prompt** (same tokenizer, same width and depth)"
SHIPPED_TABLE = "Both shipped models: heads and the cache measured on this prompt"
PIECES_TABLE = "The prompt's tokens: each position's piece and token id"
MATCHES_TABLE = "Every head: the rule it looks most like, the score, the rule's chance level, whether it beats it"
LAYER_TABLE = "Every layer's cache after this step: its class, K and V shapes and bytes"


def gqa_lead(shape: ModelShape) -> str:
    """The K/V heads tab's one sentence, above its figure (Markdown)."""
    if shape.group == 1:
        return (f"Here each of the {shape.heads} query heads has its own **K/V head**; grouped-query attention "
                "(GQA) shares one among a group of query heads and shrinks the cache.")
    return (f"Grouped-query attention (GQA): {shape.heads} query heads read {shape.kv_heads} **K/V heads**, so the "
            f"cache is {shape.group}× smaller.")


def gqa_intro(shape: ModelShape) -> str:
    """What grouped-query attention does to this model's cache (Markdown)."""
    return (f"Each of the {shape.heads} query heads scores its own queries, but the keys and values it reads "
            f"come from a **K/V head** it may share: the cache stores only the {shape.kv_heads} K/V heads. "
            "Grouped-query attention (GQA) shares each K/V head among a group of query heads, so the cache "
            "shrinks by the group size while every query head still has its own attention.")


def per_token(nbytes: float) -> str:
    return f"{nbytes:,.0f} B"


def smaller_by(shape: ModelShape) -> str:
    return f"{shape.group}×"


NO_GROUP_HELP = ("Every query head keeps its own K and V (no grouping), so the cache is as large as with plain "
                 "multi-head attention.")


@dataclass(frozen=True)
class GqaFigure:
    """One labelled figure of the K/V heads tab's row."""

    label: str
    value: str
    help: str


def gqa_stats(shape: ModelShape, per_token_text: str, mha_per_token: str) -> tuple[GqaFigure, ...]:
    """The cache per token, and with grouped heads what one K/V head per query head would take and the
    ratio; without grouping one figure that says so (three that read '4,096 B', '4,096 B', '1×' told
    nothing, issue 32)."""
    measured = GqaFigure("Cache per token (measured)", per_token_text, PER_TOKEN_HELP)
    if shape.group == 1:
        return measured, GqaFigure("Query heads per K/V head", "1", NO_GROUP_HELP)
    return (measured, GqaFigure("With a K/V head per query head", mha_per_token, MHA_HELP),
            GqaFigure("Smaller by", smaller_by(shape), GROUP_HELP))


# -- cache vs no cache -------------------------------------------------------------------------
COMPARE_LEAD = ("The same generation twice, in lockstep, **with the cache** (feed one token) and **without** "
                "(feed the whole sequence every step): the same logits and tokens, only the time differs.")
CONTEXT_FULL = "The prompt fills the model's context; shorten it to compare."
PRESS_TO_MEASURE = "Press the button to measure on this machine."
TOKENS_DIFFER = ("The two runs chose different tokens: two logits were within rounding error of "
                 "each other. Logits are compared up to the first difference.")
TIMING_NOTE = ("Each point is one decode step, the median of 3 timings. Without a cache the step "
               "re-runs the whole sequence, so it slows as the sequence grows; with the cache it only "
               "adds one token. On a model this small, fixed per-step overhead hides part of the gap.")


def logit_difference(result: CacheComparison) -> str:
    return f"{result.overall_max_abs_diff:.1e}"


def tokens_per_s(rate: float) -> str:
    return f"{rate:,.0f} tok/s"


def faster(result: CacheComparison) -> str:
    return f"cache is {result.speedup:.1f}× faster"


# -- heads that look like rules ----------------------------------------------------------------
RULES_LEAD = ("Which real heads attend like one of the toy's rules: a head's prefill attention against the "
              "rule's (1 = identical).")  # the tab's one sentence, above its figure
RULES_INTRO = ("Each real head's prefill attention is compared, row by row, with the attention the toy "
               "engine computes for a rule over the same tokens. A row scores the overlap of the two "
               "distributions (1 = identical); a head's score is the mean over rows 2…n. The toy's "
               "rules are sharp; a small, briefly trained model like the shipped one mostly spreads its "
               "attention, so 'all' (True) is often its closest rule and scores well below 1 are "
               "common. A larger local model (For developers, under the tabs) compares better.")
SHORT_PROMPT = "Matching needs a prompt of at least 2 tokens."
NOT_ADDED = "The head could not be added."


def rule_refused(message: str) -> str:
    """A rule of the visitor's that did not compile (``message`` escaped by the caller)."""
    return f"Your rule: {message}"


def above_chance(above: int, heads: int) -> str:
    """How many heads beat chance (Markdown; at least one)."""
    return (f"**{above} of {heads} heads beat chance** on the rule they look most "
            "like: their score is above what 95% of random heads (softmax of random scores over the "
            "same tokens) reach on that rule, the last row of the scores below.")


def none_above(heads: int) -> str:
    return (f"No head beats chance: on the rule it looks most like, every one of the {heads} "
            "heads scores no higher than random heads (softmax of random scores over the same tokens) do "
            "on that rule. Matching 'all' then only says the head spreads its attention.")


# the head picker's hover: its options' short labels ('L0H1 ≈ all (0.83)') in words
HEAD_PICK_HELP = ("L0H1 is layer 0, head 1 (counted from 0, as transformers counts); after ≈ the toy rule whose "
                  "attention the head's looks most like, and their overlap (1 = identical).")


def head_option(match: HeadMatch, rule: str) -> str:
    """A real head in the picker: its label, the rule it looks most like and its score, short enough to
    show whole in the narrow column beside the figure (:data:`viz.core.text.PICKER_CHARS`; 'L0H1 · looks
    like 'everything' (0.' was cut)."""
    return f"{match.label} ≈ {rule} ({match.score:.2f})"


def add_label(name: str, rule: str) -> str:
    """The button that adds the rule to the toy (``name`` and ``rule`` escaped by the caller)."""
    return f"Add '{name}' ({rule}) to the toy scenario"


def added(name: str, rule: str, match: HeadMatch) -> str:
    """What was added to the toy (plain text)."""
    return f"Added a head '{name}' with the rule {rule} (like {match.label}) to the toy scenario."


# -- the decode step's narration (above the transcript, as Decode narrates the toy's steps) -------------
def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def narrate_session(session: DecodeSession) -> str:
    """The step the session is at: what the last step fed in, what the cache holds now and what it
    grew by, and the most likely next token. Plain text (pieces are shown with ␣ and ↵)."""
    real = session.real
    layers = real.shape.layers
    tokens, nbytes, _ = session.history[-1]
    top_id, top_p = session.prediction.top_k(1)[0]
    next_word = f"Most likely next: '{piece(real, top_id)}' (p = {top_p:.2f})."
    if not session.generated:
        return (f"After the prefill: one pass over the prompt's {_plural(tokens, 'token')} filled the cache of "
                f"each of the {layers} layers ({nbytes:,} bytes in all). "
                + next_word)
    step = len(session.generated)
    before_bytes = session.history[-2][1]
    picked = piece(real, session.generated[-1])
    return (f"Step {step}: the model picked '{picked}' and fed only that one token; each of its {layers} layers "
            f"appended its key and value to the cache, which now covers {_plural(tokens, 'token')} in "
            f"{nbytes:,} bytes ({nbytes - before_bytes:+,} since the step before). " + next_word)
