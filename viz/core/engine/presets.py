"""Built-in scenarios. ``seed`` is the article exactly; each other one teaches one idea."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .scenario import Scenario

_SEED_VOCAB = [
    {"token": "nice", "value": 7, "weights": [0.8, 0.5, 0.1, 0.2]},
    {"token": "warm", "value": 6, "weights": [0.6, 0.4, 0.2, 0.3]},
    {"token": "delicious", "value": 2, "weights": [0.1, 0.2, 0.5, 0.1]},
]
_SEED_HEADS = [
    {"name": "even", "rule": "k.pos % 2 == 0"},
    {"name": "last", "rule": "k.pos == n"},
    {"name": "first", "rule": "k.pos == 1"},
    {"name": "all", "rule": "True"},
]

_PRESETS: dict[str, dict] = {
    "seed": {
        "title": "Today's weather is so …",
        "description": (
            "The worked example from the article: four hand-written heads (even positions, last "
            "token, first token, every token) over four tokens with values 10, 20, 1 and 5. Prefill "
            "gives the context [12.5, 5, 10, 9] and 'nice' wins. The 'last' head reads n, so its "
            "cached key goes stale during decode: the KV cache gives 6.0 where recomputing gives 7.0."
        ),
        "prompt": "Today's weather is so …",
        "values": [10, 20, 1, 5],
        "d_k": 64,
        "heads": _SEED_HEADS,
        "vocab": _SEED_VOCAB,
    },
    "cache-safe": {
        "title": "The seed, made cache-safe",
        "description": (
            "The seed with its 'last token' head rewritten as 'attend to self' (k.pos == q.pos). "
            "At every prompt position it now picks the query's own token, as the article's prose "
            "says (weather -> 20, is -> 1), where the code's n-based rule found no match before the "
            "last position and spread its weight evenly. The last position and the prediction are "
            "unchanged. During decode the rule does not depend on the sequence length, so the KV "
            "cache and full recomputation agree exactly at every step."
        ),
        "prompt": "Today's weather is so …",
        "values": [10, 20, 1, 5],
        "d_k": 64,
        "heads": [_SEED_HEADS[0], {"name": "self", "rule": "k.pos == q.pos"}, *_SEED_HEADS[2:]],
        "vocab": _SEED_VOCAB,
    },
    "previous-token": {
        "title": "Previous-token and same-word heads",
        "description": (
            "A head that attends to the token just before the query (k.pos == q.pos - 1) and one "
            "that attends to earlier copies of the query's own word. Together they are the parts "
            "of an induction head, the circuit real models use to continue repeated text. The "
            "first token has no previous token, so that row falls back to an even spread."
        ),
        "prompt": "the cat sat on the mat and the cat",
        "values": [1, 9, 4, 2, 1, 6, 1, 1, 9],
        "d_k": 16,
        "heads": [
            {"name": "previous", "rule": "k.pos == q.pos - 1"},
            {"name": "same word", "rule": "k.token == q.token and k.pos < q.pos"},
            {"name": "self", "rule": "k.pos == q.pos"},
        ],
        "vocab": [
            {"token": "sat", "value": 4, "weights": [0.3, 0.6, 0.2]},
            {"token": "slept", "value": 3, "weights": [0.2, 0.4, 0.4]},
            {"token": "mat", "value": 6, "weights": [0.5, 0.1, 0.1]},
        ],
    },
    "sliding-window": {
        "title": "A sliding window of three tokens",
        "description": (
            "The 'window' head only sees the query and the two tokens before it (q.pos - k.pos < 3), "
            "as in Mistral's sliding-window attention. Keys that fall out of every window are never "
            "read again, so a cache for this head could drop them and stay a fixed size; the 'all' "
            "head, by contrast, needs every key forever."
        ),
        "prompt": "one two three four five six seven",
        "values": [1, 2, 3, 4, 5, 6, 7],
        "d_k": 16,
        "heads": [
            {"name": "window", "rule": "q.pos - k.pos < 3"},
            {"name": "all", "rule": "True"},
        ],
        "vocab": [
            {"token": "eight", "value": 8, "weights": [1.0, 0.2]},
            {"token": "nine", "value": 9, "weights": [0.7, 0.4]},
            {"token": "ten", "value": 10, "weights": [0.2, 0.9]},
        ],
    },
    "never-matches": {
        "title": "A head that matches nothing",
        "description": (
            "The 'zebra' head looks for a token that is not in the prompt. Every score is -√d_k, "
            "and softmax still has to hand out a total weight of 1, so it spreads it evenly: the "
            "head returns the plain average of the values instead of 'nothing'. A softmax head "
            "cannot attend to nothing, which is why real models learn 'attention sinks'."
        ),
        "prompt": "Today's weather is so …",
        "values": [10, 20, 1, 5],
        "d_k": 64,
        "heads": [
            {"name": "zebra", "rule": 'k.token == "zebra"'},
            {"name": "weather", "rule": 'k.token == "weather"'},
        ],
        "vocab": [
            {"token": "nice", "value": 7, "weights": [0.5, 0.4]},
            {"token": "striped", "value": 3, "weights": [0.9, 0.1]},
        ],
    },
    "content": {
        "title": "Heads that look at content",
        "description": (
            "Rules can read a key's token and value, not only its position: one head attends to the "
            "words 'weather' and 'so', another to every token whose value is above 5. Both only "
            "look at the key, so their keys can be cached, and the sampling is set to draw from "
            "the top two words at temperature 0.7 with a fixed seed."
        ),
        "prompt": "Today's weather is so …",
        "values": [10, 20, 1, 5],
        "d_k": 32,
        "heads": [
            {"name": "topic", "rule": 'k.token in ("weather", "so")'},
            {"name": "big values", "rule": "k.value > 5"},
            {"name": "recent", "rule": "q.pos - k.pos <= 1"},
        ],
        "vocab": [
            {"token": "nice", "value": 7, "weights": [0.5, 0.3, 0.2]},
            {"token": "warm", "value": 6, "weights": [0.4, 0.4, 0.3]},
            {"token": "cold", "value": 4, "weights": [0.3, 0.2, 0.6]},
            {"token": "delicious", "value": 2, "weights": [0.1, 0.1, 0.1]},
        ],
        "sampling": {"strategy": "sample", "temperature": 0.7, "top_k": 2, "top_p": 1.0, "seed": 7},
    },
    "your soup": {
        "title": "Your soup is so …",
        "description": (
            "Three heads that follow what was said: 'first' reads the first token, 'self' the newest "
            "one and 'recent' the last three. Each new word's value feeds back through 'self' and "
            "'recent', so greedy decoding changes its word from step to step ('hot salty hot good'), "
            "and prompts that start with another word ('my', 'that', 'your') answer differently. "
            "No rule reads n, so the keys can be cached, shared and evicted. Serving and Memory "
            "open on it: with the seed every request would say 'nice' forever."
        ),
        "prompt": "this morning my friend said that your soup is so",
        "values": [2, 8, 4, 6, 3, 9, 7, 5, 1, 3],
        "d_k": 16,
        "heads": [
            {"name": "first", "rule": "k.pos == 1"},
            {"name": "self", "rule": "k.pos == q.pos"},
            {"name": "recent", "rule": "q.pos - k.pos <= 2"},
        ],
        "vocab": [
            {"token": "good", "value": 4, "weights": [0.6, 0.7, 0.7]},
            {"token": "hot", "value": 9, "weights": [1.0, 0.5, 0.8]},
            {"token": "salty", "value": 2, "weights": [0.7, 0.9, 0.4]},
            {"token": "thick", "value": 6, "weights": [0.7, 0.6, 0.3]},
        ],
    },
}

DEFAULT_PRESET = "seed"
VARIED_PRESET = "your soup"  # where the pages about many requests, drafts and eviction open


def preset_names() -> list[str]:
    return list(_PRESETS)


def matching_preset(scenario: Scenario) -> str | None:
    """The name of the preset this scenario is, unedited, or None."""
    return next((name for name in _PRESETS if load_preset(name) == scenario), None)


@functools.lru_cache(maxsize=None)  # a frozen Scenario per name, parsed once (the sidebar matches presets every run)
def load_preset(name: str) -> Scenario:
    """A preset by name; ``KeyError`` with the known names if there is none."""
    if name not in _PRESETS:
        raise KeyError(f"unknown preset '{name}' (known: {', '.join(_PRESETS)})")
    return Scenario.from_dict(_PRESETS[name])


@dataclass(frozen=True)
class Opening:
    """The scenario a page about many outputs shows, and why, when it is not the visitor's."""

    scenario: Scenario
    note: str  # one line saying the seed was swapped and why; "" when the visitor's scenario is shown
    aside: str = ""  # the same in a few words, beside the scenario picker that still names the seed


# The pages that open on the varied preset while the seed is loaded (url path -> the name they say)
VARIED_PAGES = {"memory": "Memory", "serving": "Serving"}


def varied_opening(scenario: Scenario, page: str) -> Opening:
    """The scenario ``page`` (Serving, Memory) shows: the visitor's own, except the unedited seed,
    whose greedy output is one word repeated, so requests, drafts and eviction would all say 'nice'
    and no control would change a word. Then the varied preset, with a line saying so."""
    if matching_preset(scenario) != DEFAULT_PRESET:
        return Opening(scenario, "")
    varied = load_preset(VARIED_PRESET)
    # named as the sidebar's picker names it, with its prompt as the page shows it (its tokens), not its title
    shown = f"the '{VARIED_PRESET}' scenario ('{' '.join(varied.tokens)}')"
    return Opening(varied, f"{page} opens on {shown}, whose words vary: with the seed every request, "
                           "draft and eviction would say 'nice' every time. Edit the seed or pick another "
                           "scenario in the sidebar to use it here.",
                   f"{page} shows {shown} instead: the seed's words never vary.")


def sequence(scenario: Scenario, n: int) -> tuple[list[str], list[float]]:
    """n tokens and values: the scenario's prompt repeated (long inputs for measurements)."""
    m = len(scenario.tokens)
    return [scenario.tokens[i % m] for i in range(n)], [scenario.values[i % m] for i in range(n)]


def busy_scenario() -> Scenario:
    """A busier classroom demo for latency measurements: 64 tokens, 8 heads, d_k = 64."""
    seed = load_preset("seed")
    rules = ("k.pos % 2 == 0", "k.pos == q.pos", "k.pos == 1", "True", "k.pos == q.pos - 1",
             "q.pos - k.pos < 3", 'k.token in ("weather", "so")', "k.value > 5")
    tokens, values = sequence(seed, 64)
    return Scenario.from_dict({
        "title": "64 tokens, 8 heads", "tokens": tokens, "values": values, "d_k": 64,
        "heads": [{"name": f"h{i + 1}", "rule": rule} for i, rule in enumerate(rules)],
        "vocab": [{"token": w.token, "value": w.value, "weights": list(w.weights) * 2}
                  for w in seed.vocab],
    })
