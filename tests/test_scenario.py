"""Tier 1: scenarios load, validate with clear messages and round-trip exactly; the tokenizer."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostile_text import record
from viz import Scenario, ScenarioError, load_preset, preset_names, tokenize
from viz.core.engine.scenario import MAX_HEADS, MAX_JSON_BYTES, MAX_TOKENS


def seed_dict() -> dict:
    return load_preset("seed").to_dict()


def test_tokenizer_seed_prompt():
    """'Today's weather is so …' gives the article's four tokens."""
    assert tokenize("Today's weather is so …") == ["Today", "weather", "is", "so"]
    assert tokenize("Today’s weather is so...") == ["Today", "weather", "is", "so"]


@pytest.mark.parametrize("text, tokens", [
    ("Hello, world!", ["Hello", "world"]),
    ("don't stop well-known", ["don't", "stop", "well-known"]),
    ("", []), ("   \t\n", []),
    ("<img src=x onerror=alert(1)>", ["<", "img", "src", "=", "x", "onerror", "=", "alert", "1", ">"]),
    ("I 👍 it", ["I", "👍", "it"]),
    ("שלום עולם", ["שלום", "עולם"]),
    ("a\x00b\x07c", ["a", "b", "c"]),
])
def test_tokenizer_cases(text, tokens):
    """Punctuation and control characters are dropped; symbols and emoji stay as tokens."""
    assert tokenize(text) == tokens


@pytest.mark.parametrize("name", preset_names())
def test_presets_round_trip_exactly(name):
    """Every preset survives dict and JSON round trips unchanged."""
    scenario = load_preset(name)
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    assert Scenario.from_json(scenario.to_json()) == scenario
    assert Scenario.from_json(scenario.to_json(indent=None)).to_dict() == scenario.to_dict()
    assert scenario.title and scenario.description


def test_seed_json_matches_design():
    """The seed's JSON has the fields and numbers of the design document's example."""
    data = seed_dict()
    assert data["version"] == 1 and data["prompt"] == "Today's weather is so …" and "tokens" not in data
    assert data["values"] == [10, 20, 1, 5] and data["d_k"] == 64
    assert [h["rule"] for h in data["heads"]] == ["k.pos % 2 == 0", "k.pos == n", "k.pos == 1", "True"]
    assert data["vocab"][0] == {"token": "nice", "value": 7, "weights": [0.8, 0.5, 0.1, 0.2]}
    assert data["sampling"] == {"strategy": "greedy", "temperature": 1, "top_k": 0, "top_p": 1, "seed": 0}


def test_edited_tokens_are_saved_explicitly():
    """Tokens that no longer match the prompt are written out, and the round trip holds."""
    data = seed_dict()
    data["tokens"] = ["Today", "weather", "was", "so"]
    scenario = Scenario.from_dict(data)
    assert scenario.tokens[2] == "was" and scenario.to_dict()["tokens"][2] == "was"
    assert Scenario.from_dict(scenario.to_dict()) == scenario


def test_values_default_to_vocabulary_value_or_one():
    """Without values, a token takes its vocabulary value, else 1."""
    data = seed_dict()
    del data["values"]
    data["prompt"] = "so nice"
    assert Scenario.from_dict(data).values == (1.0, 7.0)


def test_with_prompt_keeps_values_of_unchanged_tokens():
    """Retyping the prompt keeps each unchanged token's value."""
    scenario = load_preset("seed").with_prompt("Today's weather is so very")
    assert scenario.tokens == ("Today", "weather", "is", "so", "very")
    assert scenario.values == (10, 20, 1, 5, 1)


def _mutate(path: str, value):
    data = seed_dict()
    target = data
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if value is KeyError:
        del target[last]
    else:
        target[int(last) if last.isdigit() else last] = value
    return data


BAD = [
    (_mutate("version", 7), "version", "unsupported scenario version 7"),
    (_mutate("prompt", ""), "prompt", "no tokens"),
    (_mutate("prompt", "   "), "prompt", "no tokens"),
    (_mutate("prompt", "word " * 600), "prompt", f"limit is {MAX_TOKENS}"),
    (_mutate("prompt", 5), "prompt", "must be text"),
    (_mutate("values", [10, 20, 1]), "values", "3 values for 4 tokens"),
    (_mutate("values.0", "ten"), "values[0]", "must be a number"),
    (_mutate("values.1", float("nan")), "values[1]", "finite"),
    (_mutate("values.1", float("inf")), "values[1]", "finite"),
    (_mutate("values.1", 1e308), "values[1]", "between"),
    (_mutate("values.1", None), "values[1]", "must be a number"),
    (_mutate("values.1", True), "values[1]", "must be a number"),
    (_mutate("heads", []), "heads", "at least one head"),
    (_mutate("heads", [{"name": f"h{i}", "rule": "True"} for i in range(64)]), "heads", f"limit is {MAX_HEADS}"),
    (_mutate("heads.1.name", "even"), "heads[1].name", "used twice"),
    (_mutate("heads.1.name", ""), "heads[1].name", "empty"),
    (_mutate("heads.1.rule", "k.__class__"), "heads[1].rule", "attribute 'k.__class__' is not allowed"),
    (_mutate("heads.1.rule", None), "heads[1].rule", "must be text"),
    (_mutate("heads.1.extra", 1), "heads[1]", "unknown field"),
    (_mutate("vocab", []), "vocab", "at least one word"),
    (_mutate("vocab.0.weights", [1, 2]), "vocab[0].weights", "2 weights for 4 heads"),
    (_mutate("vocab.0.weights", None), "vocab[0].weights", "must be a list"),
    (_mutate("vocab.1.token", "nice"), "vocab[1].token", "listed twice"),
    (_mutate("d_k", 0), "d_k", "between 1"),
    (_mutate("d_k", -3), "d_k", "between 1"),
    (_mutate("d_k", 10**9), "d_k", "between 1"),
    (_mutate("d_k", 6.5), "d_k", "whole number"),
    (_mutate("sampling.temperature", -1), "sampling.temperature", "between 0"),
    (_mutate("sampling.top_p", 0), "sampling.top_p", "above 0"),
    (_mutate("sampling.top_p", 1.5), "sampling.top_p", "between 0"),
    (_mutate("sampling.top_k", 10), "sampling.top_k", "vocabulary has 3 words"),
    (_mutate("sampling.strategy", "beam"), "sampling.strategy", "one of greedy, sample"),
    (_mutate("prompt", KeyError), "", "needs a 'prompt' or a 'tokens' list"),
    ([1, 2, 3], "", "must be an object"),
    ({"prompt": "x", "heads": [{"rule": "True"}], "vocab": [{"token": "a", "weights": [1]}], "foo": 1},
     "", "unknown field 'foo'"),
]


@pytest.mark.parametrize("data, path, message", BAD)
def test_bad_scenarios_are_refused_with_a_path_and_message(data, path, message):
    """Each bad scenario raises ScenarioError naming the field and the problem."""
    with pytest.raises(ScenarioError) as info:
        Scenario.from_dict(data)
    assert info.value.path == path
    assert message in str(info.value)


@pytest.mark.parametrize("text, message", [
    ("{", "not valid JSON"), ("", "not valid JSON"), ("null", "must be an object"),
    ('{"prompt": "a"', "not valid JSON"), ("[" * 100_001, "too large"),
    (" " * (MAX_JSON_BYTES + 1), "too large"), ("[" * 50_000, "not valid JSON"),
])
def test_bad_json_is_refused(text, message):
    """Garbage, truncated, deeply nested or oversized JSON gives a ScenarioError."""
    with pytest.raises(ScenarioError, match=message):
        Scenario.from_json(text)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda children: st.lists(children, max_size=4)
                    | st.dictionaries(st.sampled_from(list(seed_dict()) + ["name", "rule", "token",
                                                                           "weights", "x"]),
                                      children, max_size=6), max_leaves=30))
def test_loader_never_raises_anything_but_scenario_error(data):
    """Arbitrary JSON-like input either loads or raises ScenarioError; nothing else escapes."""
    try:
        scenario = Scenario.from_dict(data)
    except ScenarioError as err:
        assert err.message
        record("Scenario JSON: arbitrary JSON values", "refused")
        return
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    record("Scenario JSON: arbitrary JSON values", "ran")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_prompt_text_tokenizes_or_is_refused_cleanly(prompt):
    """Any typed prompt either gives a valid scenario or a ScenarioError."""
    try:
        scenario = load_preset("seed").with_prompt(prompt)
    except ScenarioError as err:
        assert err.message
        record("Prompts: any typed text", "refused")
        return
    assert scenario.tokens == tuple(tokenize(prompt)) and len(scenario.values) == len(scenario.tokens)
    assert json.loads(scenario.to_json())["prompt"] == prompt
    record("Prompts: any typed text", "ran")
