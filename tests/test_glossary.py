"""Tier 1: one vocabulary (viz.core.lessons.glossary): every term a first-year student may not know is
defined, every such term the figures and their tables show has an entry, the figures say the cache
holds entries and "kept" only where something filtered, and docs/design.md's Glossary lists them all."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from figure_gallery import gallery, tables
from viz.core.lessons import glossary
from viz.core.lessons.glossary import GLOSSARY, defined, hover, lookup, terms_in
from viz.figures.base import figure_terms

DESIGN = Path(__file__).resolve().parents[1] / "docs" / "design.md"

# Words on screen a first-year student may not know. Acronyms (TTFT, KV) and names with an underscore
# or a root (d_k, √d_k) are found on their own; these are the plain-looking ones.
JARGON = ("prefill", "decode", "softmax", "logit", "logits", "query", "queries", "key", "keys", "value", "context",
          "head", "heads", "token", "tokens", "tick", "ticks", "iteration", "block", "blocks", "slot", "slots",
          "pool", "prefix caching", "stale", "sink", "evicted", "quantisation", "greedy", "temperature", "top-k",
          "top-p", "tile", "tiles", "draft", "target", "round", "guess", "guesses", "copy on write", "ref",
          "masked", "multiply-adds", "score", "scores", "chunk", "preempted", "swapped out", "recompute",
          "re-encode", "entries", "entry", "block table", "continuous batching", "static batching", "batch",
          "FLOPs per byte", "ridge point", "bandwidth", "memory-bound", "compute-bound", "n")

PRODUCT_NAMES = {"GPT", "SXM", "PCIe", "NVL"}  # parts of a model's or a GPU's name: names, not terms


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [s for v in np.asarray(value, dtype=object).ravel().tolist() for s in _strings(v)]
    return []


def _texts(obj) -> list[str]:
    """What a figure or board says in words: title, axis titles, notes, legend, hovers, cells' tips."""
    if isinstance(obj, go.Figure):
        spec = obj.to_plotly_json()
        layout = spec["layout"]
        out = [layout.get("title", {}).get("text", "")]
        out += [(v.get("title") or {}).get("text") or "" for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))]
        out += [note.get("text", "") for note in layout.get("annotations", [])]
        for trace in spec["data"]:
            out += [trace.get("name") or "", trace.get("hovertemplate") or ""]
            out += _strings(trace.get("customdata")) + _strings(trace.get("hovertext"))
        return [re.sub(r"<br>|%\{[^}]*\}|<extra>.*?</extra>", " ", text) for text in out]
    out = [obj.get("title", ""), obj.get("axis", "")] + [item["label"] for item in obj.get("legend", [])]
    out += [cell["tip"] for group in obj.get("groups", []) for row in group["rows"] for cell in row["cells"]]
    return out + [bar.get("tip", "") for bar in obj.get("bars", [])]


def _screen_words() -> str:
    words = [t for _, fig, _ in gallery() for t in _texts(fig)]
    words += [str(column) for _, table in tables() for column in table.columns]
    return "\n".join(words)


def test_the_terms_the_issue_names_are_defined():
    """d_k, √d_k, ticks, iterations, TTFT, TPOT, GQA, MLA, the ridge point, FLOPs per byte and the
    lesson's own words each have a short and a long definition."""
    for word in ("d_k", "√d_k", "tick", "iteration", "TTFT", "TPOT", "GQA", "MLA", "ridge point", "FLOPs per byte",
                 "prefill", "decode", "KV cache", "block", "prefix caching", "stale key", "sink", "context",
                 "context length", "entry", "step"):
        term = lookup(word)
        assert term is not None, word
        assert term.short and term.long and len(term.short) <= 110 and "\n" not in term.short, word


def test_one_word_one_term():
    """No spelling names two terms; every short definition is one sentence-like line ending in a full stop."""
    spellings = [s.lower() for term in GLOSSARY for s in term.spellings]
    assert len(spellings) == len(set(spellings))
    assert all(term.short.endswith(".") and term.long.endswith(".") for term in GLOSSARY)


def test_every_jargon_word_the_figures_show_is_in_the_glossary():
    """Every acronym, every name like d_k and every word of the jargon list that a figure, a board or
    a figure module's table shows has a glossary entry (the screen's hover definitions come from it)."""
    text = _screen_words()
    found = set(re.findall(r"\b[A-Z]{2,}[A-Za-z]*\b", text)) | set(re.findall(r"√?\b[A-Za-z]+_[A-Za-z]+\b", text))
    found |= {word for word in JARGON if re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, re.IGNORECASE)}
    assert {"d_k", "KV", "TTFT", "TPOT", "prefill", "ticks", "stale"} <= found
    missing = sorted(word for word in found - PRODUCT_NAMES if lookup(word) is None and lookup(f"{word} cache") is None)
    assert not missing, missing


def test_the_figures_count_the_cache_in_entries_and_say_kept_only_where_something_filtered():
    """One word per thing: no figure counts the cache in "keys seen", "keys held" or "tokens held";
    a "kept" legend entry appears only beside a "filtered out" one (greedy keeps nothing in particular)."""
    text = _screen_words().lower()
    assert not re.search(r"keys seen|keys held|keys in the cache|tokens held", text)
    for name, fig, _ in gallery():
        if isinstance(fig, dict) and fig.get("kind") == "bars":
            labels = [item["label"] for item in fig["legend"]]
            assert not any("kept" in label for label in labels) or any("filtered" in label for label in labels), name


def test_hover_and_terms_in_find_terms_by_any_spelling():
    """A hover reads 'term: definition'; terms_in finds whole words in any case, leaves one-letter
    spellings alone, and an unknown word is a KeyError, not a made-up definition."""
    assert hover("ttft") == f"TTFT: {lookup('TTFT').short}"
    assert lookup("KIVI") is lookup("quantisation") and lookup("ticks") is lookup("tick")
    found = [term.term for term in terms_in("The KV cache holds 5 entries; TPOT is 2 ticks. n and K stay plain.")]
    assert found == ["KV cache", "entry", "tick", "TPOT"]
    assert terms_in("prefilling") == [] and terms_in("a stale key") == [lookup("stale key")]
    with pytest.raises(KeyError):
        hover("flux capacitor")


def test_design_md_glossary_lists_every_term_and_the_decisions():
    """docs/design.md ends with a Glossary section that lists every term in bold and states the word
    decisions the module's docstring makes (entries, context, step)."""
    text = DESIGN.read_text(encoding="utf-8")
    section = text[text.index("\n## Glossary"):]
    missing = [term.term for term in GLOSSARY if f"**{term.term}**" not in section]
    assert not missing, missing
    for decision in ("entries", "context length", "step"):
        assert decision in section and decision in glossary.__doc__


def test_a_figure_names_the_terms_the_streamlit_layer_defines_beside_it():
    """figure_terms reads a figure's or board's title, axes and legend: the FlashAttention tiles name
    the tile, the score and √d_k; the attention board the query, the key and the new key; the stale
    cache board the stale key; every matrix names at least one term."""
    figures = {name: fig for name, fig, _ in gallery()}
    names = lambda name: {term.term for term in figure_terms(figures[name])}  # noqa: E731
    assert {"FlashAttention", "score", "√d_k", "query", "key"} <= names("tiles")
    assert {"head", "query", "key"} <= names("attention board")
    assert {"KV cache", "stale key", "entry"} <= names("cache board")
    assert all(figure_terms(fig) for _, fig, matrix in gallery() if matrix)


def test_the_device_cuda_is_defined_as_itself_not_as_a_cuda_graph():
    """Cost's 'Measured on cuda (…)' on a GPU server: its hover defines CUDA, not CUDA graphs (found on an H100)."""
    hover_text = defined("Measured on cuda (NVIDIA H100 80GB HBM3) (1 CPU thread) in 0.6 s.")
    assert hover_text.startswith("CUDA: NVIDIA's platform") and "CUDA graph" not in hover_text
    assert defined("A CUDA graph replays the step.").startswith("CUDA graph: A recorded sequence")
