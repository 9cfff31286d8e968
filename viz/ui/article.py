"""The source article kvlab is built on: named and linked wherever a page says "the article"."""

from __future__ import annotations

TITLE = "From Prompt to Prediction: Understanding Prefill, Decode, and the KV Cache in LLMs"
URL = "https://machinelearningmastery.com/from-prompt-to-prediction-understanding-prefill-decode-and-the-kv-cache-in-llms/"
SITE = "MachineLearningMastery.com"


def link() -> str:
    """The article as a Markdown link with its credit (fixed text, never visitor text)."""
    return f"[“{TITLE}”]({URL}) on {SITE}"
