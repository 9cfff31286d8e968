"""The scenario: everything a person can edit, as frozen dataclasses with one JSON format.

The same JSON serves presets, uploaded files, share links and the CLI (see docs/design.md). Loading
validates every field and raises :class:`ScenarioError` with the field's path and a plain message;
nothing here raises anything else for bad input. ``Scenario.from_dict(s.to_dict()) == s`` holds
for every valid scenario.

Limits are stated once, in :mod:`viz.core.limits` (re-exported here, and listed in ``LIMITS``), so
the app, the CLI and the tests name the same numbers. Every text field (prompt, tokens, head names,
rules, vocabulary words, title, description) refuses lone surrogates, Unicode non-characters and
control characters (see :mod:`viz.core.text`), with a message that names the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from .. import text as text_check
from ..limits import (MAX_ABS_NUMBER, MAX_D_K, MAX_DECODE_STEPS, MAX_HEADS, MAX_JSON_BYTES, MAX_NAME_CHARS,
                     MAX_POSITION, MAX_PROMPT_CHARS, MAX_RULE_CHARS, MAX_SEED, MAX_TEMPERATURE, MAX_TEXT_CHARS,
                     MAX_TITLE_CHARS, MAX_TOKEN_CHARS, MAX_TOKENS, MAX_VOCAB)
from ..rules.language import RuleError, cache_safe_rule, compile_rule
from .tokenizer import tokenize

__all__ = ["VERSION", "LIMITS", "STRATEGIES", "Head", "Sampling", "Scenario", "ScenarioError", "VocabWord",
           "MAX_ABS_NUMBER", "MAX_D_K", "MAX_DECODE_STEPS", "MAX_HEADS", "MAX_JSON_BYTES", "MAX_NAME_CHARS",
           "MAX_POSITION", "MAX_PROMPT_CHARS", "MAX_SEED", "MAX_TEMPERATURE", "MAX_TEXT_CHARS",
           "MAX_TITLE_CHARS", "MAX_TOKEN_CHARS", "MAX_TOKENS", "MAX_VOCAB"]

VERSION = 1

STRATEGIES = ("greedy", "sample")

LIMITS = {
    "tokens": MAX_TOKENS, "token characters": MAX_TOKEN_CHARS, "heads": MAX_HEADS,
    "vocabulary words": MAX_VOCAB, "rule characters": MAX_RULE_CHARS, "d_k": MAX_D_K,
    "absolute value of a number": MAX_ABS_NUMBER, "scenario JSON bytes": MAX_JSON_BYTES,
    "decode steps": MAX_DECODE_STEPS,
}


class ScenarioError(ValueError):
    """Invalid scenario input. ``path`` names the field (e.g. ``heads[2].rule``)."""

    def __init__(self, path: str, message: str):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True)
class Head:
    name: str  # shown in every figure; unique within a scenario
    rule: str  # rule-language text, see viz.core.rules.language


@dataclass(frozen=True)
class VocabWord:
    token: str  # the word that can be generated
    value: float  # its V when it is appended during decode
    weights: tuple[float, ...]  # one per head: its column of W_vocab


@dataclass(frozen=True)
class Sampling:
    strategy: str = "greedy"  # "greedy" (first index of the maximum) or "sample"
    temperature: float = 1.0  # probabilities = softmax(logits / temperature); 0 means greedy
    top_k: int = 0  # keep the k most likely words; 0 keeps all
    top_p: float = 1.0  # keep the smallest set whose probability reaches top_p; 1 keeps all
    seed: int = 0  # seeds the torch.Generator used for sampling


@dataclass(frozen=True)
class Scenario:
    tokens: tuple[str, ...]
    values: tuple[float, ...]  # one V per token
    heads: tuple[Head, ...]
    vocab: tuple[VocabWord, ...]
    d_k: int = 64
    sampling: Sampling = field(default_factory=Sampling)
    prompt: str | None = None  # the text the tokens came from, if any
    title: str = ""
    description: str = ""

    @property
    def head_names(self) -> list[str]:
        return [head.name for head in self.heads]

    @property
    def vocab_tokens(self) -> list[str]:
        return [word.token for word in self.vocab]

    # -- serialisation ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The JSON form (docs/design.md), with ``version``. Whole-number floats are written as ints."""
        out: dict[str, Any] = {"version": VERSION}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.prompt is not None:
            out["prompt"] = self.prompt
        if self.prompt is None or tuple(tokenize(self.prompt)) != self.tokens:
            out["tokens"] = list(self.tokens)
        out["values"] = [_number_out(v) for v in self.values]
        out["d_k"] = self.d_k
        out["heads"] = [{"name": h.name, "rule": h.rule} for h in self.heads]
        out["vocab"] = [{"token": w.token, "value": _number_out(w.value),
                         "weights": [_number_out(x) for x in w.weights]} for w in self.vocab]
        s = self.sampling
        out["sampling"] = {"strategy": s.strategy, "temperature": _number_out(s.temperature),
                           "top_k": s.top_k, "top_p": _number_out(s.top_p), "seed": s.seed}
        return out

    def to_json(self, indent: int | None = 2) -> str:
        separators = (",", ":") if indent is None else None
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, separators=separators)

    @classmethod
    def from_dict(cls, data: Any) -> "Scenario":
        """Validate and build; raises :class:`ScenarioError` for anything wrong."""
        return _parse(data)

    @classmethod
    def from_json(cls, text: str | bytes) -> "Scenario":
        if len(text) > MAX_JSON_BYTES:
            raise ScenarioError("", f"scenario is too large ({len(text):,} bytes; the limit is "
                                    f"{MAX_JSON_BYTES:,})")
        if isinstance(text, (bytes, bytearray)):
            try:
                text = bytes(text).decode("utf-8-sig")
            except UnicodeDecodeError as err:
                raise ScenarioError("", f"the scenario is not UTF-8 text (byte {err.start + 1} cannot be "
                                        "read); save it as UTF-8") from None
        try:
            data = json.loads(text)
        except (ValueError, RecursionError) as err:
            raise ScenarioError("", f"not valid JSON ({text_check.shown(err)})") from None
        return _parse(data)

    # -- edits that keep the scenario consistent --------------------------------------------
    def with_prompt(self, prompt: str) -> "Scenario":
        """Retokenise; a token keeps its value if the same token stood at the same place before."""
        tokens = tuple(tokenize(_text("prompt", prompt, MAX_PROMPT_CHARS)))
        values = tuple(self.values[i] if i < len(self.tokens) and self.tokens[i] == t
                       else self.default_value(t) for i, t in enumerate(tokens))
        return _validated(replace(self, prompt=prompt, tokens=tokens, values=values))

    def with_tokens(self, tokens: list[str], values: list[float]) -> "Scenario":
        """An explicit token list (the prompt text is kept for display)."""
        return _validated(replace(self, tokens=tuple(tokens), values=tuple(values)))

    def with_heads(self, heads: list[Head], sources: list[int | None]) -> "Scenario":
        """A new head list. ``sources[i]`` is the old index head i came from, so its column of
        W_vocab moves with it; ``None`` marks a new head, whose weights start at 0."""
        vocab = tuple(replace(word, weights=tuple(0.0 if src is None else word.weights[src]
                                                  for src in sources)) for word in self.vocab)
        return _validated(replace(self, heads=tuple(heads), vocab=vocab))

    def with_vocab(self, vocab: list[VocabWord]) -> "Scenario":
        return _validated(replace(self, vocab=tuple(vocab)))

    def with_head_added(self, name: str, rule: str) -> "Scenario":
        """Append a head (weights 0); a taken name gets a number: 'self', 'self 2', …"""
        taken, unique, i = set(self.head_names), name, 1
        while unique in taken:
            i += 1
            unique = f"{name} {i}"
        return self.with_heads([*self.heads, Head(unique, rule)], [*range(len(self.heads)), None])

    def cache_safe(self) -> "Scenario":
        """Every head that reads ``n`` rewritten with ``q.pos`` (see viz.core.rules.language.cache_safe_rule)."""
        heads = tuple(replace(h, rule=cache_safe_rule(h.rule)) for h in self.heads)
        return _validated(replace(self, heads=heads))

    def n_readers(self) -> str:
        """The heads whose rule reads ``n`` (not cacheable) as a sentence's start: "Head 'last' reads
        n", "Heads 'a' and 'b' read n", "Heads 'a', 'b' and 'c' read n"; "" when none does."""
        names = [f"'{h.name}'" for h in self.heads if not compile_rule(h.rule).cacheable]
        if not names:
            return ""
        return f"Head {names[0]} reads n" if len(names) == 1 else f"Heads {text_check.joined(names)} read n"

    def default_value(self, token: str) -> float:
        """A token without a value takes its vocabulary value, or 1."""
        return next((w.value for w in self.vocab if w.token == token), 1.0)

    def validated(self) -> "Scenario":
        return _validated(self)


def _number_out(x: float) -> float | int:
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else x


def _text(path: str, value: Any, limit: int, *, allow_empty: bool = True, multiline: bool = True) -> str:
    if not isinstance(value, str):
        raise ScenarioError(path, f"must be text, got {text_check.kind(value)}")
    if len(value) > limit:
        raise ScenarioError(path, f"is too long ({len(value):,} characters; the limit is {limit:,})")
    problem = text_check.problem(value, multiline=multiline)
    if problem:
        raise ScenarioError(path, problem)
    if not allow_empty and not value.strip():
        raise ScenarioError(path, "is empty")
    return value


def _name(path: str, value: Any, limit: int) -> str:
    """One-line text: a token, a head name, a vocabulary word."""
    return _text(path, value, limit, allow_empty=False, multiline=False)


def _number(path: str, value: Any, low: float = -MAX_ABS_NUMBER, high: float = MAX_ABS_NUMBER) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(path, f"must be a number, got {text_check.kind(value)}")
    x = float(value) if not isinstance(value, int) or abs(value) < 2**63 else math.inf
    if not math.isfinite(x):
        raise ScenarioError(path, "must be a finite number")
    if not low <= x <= high:
        raise ScenarioError(path, f"must be between {low:g} and {high:g}, got {x:g}")
    return x


def _integer(path: str, value: Any, low: int, high: int) -> int:
    try:
        return text_check.whole_number(value, low, high)
    except ValueError as err:
        raise ScenarioError(path, str(err)) from None


def _list(path: str, value: Any, limit: int, *, what: str) -> list:
    if not isinstance(value, list):
        raise ScenarioError(path, f"must be a list, got {text_check.kind(value)}")
    if len(value) > limit:
        raise ScenarioError(path, f"has {len(value):,} {what}; the limit is {limit}")
    return value


def _object(path: str, value: Any, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(path, f"must be an object, got {text_check.kind(value)}")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ScenarioError(path, f"unknown field '{text_check.shown(unknown[0])}' "
                                  f"(known: {', '.join(sorted(allowed))})")
    return value


_TOP_FIELDS = {"version", "title", "description", "prompt", "tokens", "values", "d_k", "heads",
               "vocab", "sampling"}


def _parse(data: Any) -> Scenario:
    data = _object("", data, _TOP_FIELDS)
    version = data.get("version", VERSION)
    if version != VERSION or isinstance(version, bool):
        raise ScenarioError("version", f"unsupported scenario version {text_check.shown(repr(version))} "
                                       f"(this kvlab reads version {VERSION})")
    title = _text("title", data.get("title", ""), MAX_TITLE_CHARS, multiline=False)
    description = _text("description", data.get("description", ""), MAX_TEXT_CHARS)
    prompt = data.get("prompt")
    if prompt is not None:
        prompt = _text("prompt", prompt, MAX_PROMPT_CHARS)
    tokens = _parse_tokens(data, prompt)
    heads, vocab, sampling = _parse_heads(data), _parse_vocab(data), _parse_sampling(data)
    scenario = Scenario(
        tokens=tokens, values=(), heads=heads, vocab=vocab,
        d_k=_integer("d_k", data.get("d_k", 64), 1, MAX_D_K), sampling=sampling, prompt=prompt,
        title=title, description=description,
    )
    if "values" in data:
        raw_values = _list("values", data["values"], MAX_TOKENS, what="values")
        values = tuple(_number(f"values[{i}]", v) for i, v in enumerate(raw_values))
    else:
        values = tuple(scenario.default_value(t) for t in tokens)
    return _validated(replace(scenario, values=values))


def _parse_tokens(data: Mapping[str, Any], prompt: str | None) -> tuple[str, ...]:
    """The 'tokens' list, else the prompt's tokens."""
    if "tokens" in data:
        raw_tokens = _list("tokens", data["tokens"], MAX_TOKENS, what="tokens")
        return tuple(_name(f"tokens[{i}]", t, MAX_TOKEN_CHARS) for i, t in enumerate(raw_tokens))
    if prompt is None:
        raise ScenarioError("", "needs a 'prompt' or a 'tokens' list")
    tokens = tuple(tokenize(prompt))
    if len(tokens) > MAX_TOKENS:
        raise ScenarioError("prompt", f"has {len(tokens):,} tokens; the limit is {MAX_TOKENS}")
    for i, t in enumerate(tokens):
        _name(f"prompt token {i + 1}", t, MAX_TOKEN_CHARS)
    return tokens


def _parse_heads(data: Mapping[str, Any]) -> tuple[Head, ...]:
    heads_raw = _list("heads", data.get("heads"), MAX_HEADS, what="heads") if "heads" in data else None
    if not heads_raw:
        raise ScenarioError("heads", "needs at least one head")
    heads = []
    for i, item in enumerate(heads_raw):
        item = _object(f"heads[{i}]", item, {"name", "rule"})
        name = _name(f"heads[{i}].name", item.get("name", f"head {i + 1}"), MAX_NAME_CHARS)
        rule = item.get("rule")
        if not isinstance(rule, str):
            raise ScenarioError(f"heads[{i}].rule", f"must be text, got {text_check.kind(rule)}")
        heads.append(Head(name=name, rule=rule))
    return tuple(heads)


def _parse_vocab(data: Mapping[str, Any]) -> tuple[VocabWord, ...]:
    vocab_raw = _list("vocab", data.get("vocab"), MAX_VOCAB, what="words") if "vocab" in data else None
    if not vocab_raw:
        raise ScenarioError("vocab", "needs at least one word")
    vocab = []
    for i, item in enumerate(vocab_raw):
        item = _object(f"vocab[{i}]", item, {"token", "value", "weights"})
        token = _name(f"vocab[{i}].token", item.get("token"), MAX_TOKEN_CHARS)
        value = _number(f"vocab[{i}].value", item.get("value", 1.0))
        weights_raw = _list(f"vocab[{i}].weights", item.get("weights"), MAX_HEADS, what="weights")
        weights = tuple(_number(f"vocab[{i}].weights[{j}]", w) for j, w in enumerate(weights_raw))
        vocab.append(VocabWord(token=token, value=value, weights=weights))
    return tuple(vocab)


def _parse_sampling(data: Mapping[str, Any]) -> Sampling:
    sampling_raw = _object("sampling", data.get("sampling", {}), {"strategy", "temperature", "top_k",
                                                                  "top_p", "seed"})
    defaults = Sampling()
    strategy = sampling_raw.get("strategy", defaults.strategy)
    if strategy not in STRATEGIES:
        raise ScenarioError("sampling.strategy", f"must be one of {', '.join(STRATEGIES)}")
    return Sampling(
        strategy=strategy,
        temperature=_number("sampling.temperature", sampling_raw.get("temperature", defaults.temperature),
                            0.0, MAX_TEMPERATURE),
        top_k=_integer("sampling.top_k", sampling_raw.get("top_k", defaults.top_k), 0, MAX_VOCAB),
        top_p=_number("sampling.top_p", sampling_raw.get("top_p", defaults.top_p), 0.0, 1.0),
        seed=_integer("sampling.seed", sampling_raw.get("seed", defaults.seed), 0, MAX_SEED),
    )


def _validated(s: Scenario) -> Scenario:
    """Checks that span fields: counts agree, names are unique, rules compile, limits hold."""
    _text("title", s.title, MAX_TITLE_CHARS, multiline=False)
    _text("description", s.description, MAX_TEXT_CHARS)
    if s.prompt is not None:
        _text("prompt", s.prompt, MAX_PROMPT_CHARS)
    if not s.tokens:
        raise ScenarioError("prompt" if s.prompt is not None else "tokens",
                            "has no tokens; type at least one word")
    if len(s.tokens) > MAX_TOKENS:
        raise ScenarioError("prompt", f"has {len(s.tokens):,} tokens; the limit is {MAX_TOKENS}")
    for i, token in enumerate(s.tokens):
        _name(f"tokens[{i}]", token, MAX_TOKEN_CHARS)
    if len(s.values) != len(s.tokens):
        raise ScenarioError("values", f"has {len(s.values)} values for {len(s.tokens)} tokens; "
                                      "give one value per token")
    if not 1 <= len(s.heads) <= MAX_HEADS:
        raise ScenarioError("heads", f"needs 1 to {MAX_HEADS} heads, got {len(s.heads)}")
    seen: set[str] = set()
    for i, head in enumerate(s.heads):
        _name(f"heads[{i}].name", head.name, MAX_NAME_CHARS)
        if head.name in seen:
            raise ScenarioError(f"heads[{i}].name", f"'{head.name}' is used twice; head names must differ")
        seen.add(head.name)
        try:
            compile_rule(head.rule)
        except RuleError as err:
            raise ScenarioError(f"heads[{i}].rule", str(err)) from None
    if not 1 <= len(s.vocab) <= MAX_VOCAB:
        raise ScenarioError("vocab", f"needs 1 to {MAX_VOCAB} words, got {len(s.vocab)}")
    seen = set()
    for i, word in enumerate(s.vocab):
        _name(f"vocab[{i}].token", word.token, MAX_TOKEN_CHARS)
        if word.token in seen:
            raise ScenarioError(f"vocab[{i}].token", f"'{word.token}' is listed twice")
        seen.add(word.token)
        _number(f"vocab[{i}].value", word.value)
        if len(word.weights) != len(s.heads):
            raise ScenarioError(f"vocab[{i}].weights", f"has {len(word.weights)} weights for "
                                                       f"{len(s.heads)} heads; give one per head")
        for j, w in enumerate(word.weights):
            _number(f"vocab[{i}].weights[{j}]", w)
    for i, v in enumerate(s.values):
        _number(f"values[{i}]", v)
    _integer("d_k", s.d_k, 1, MAX_D_K)
    t = s.sampling
    if t.strategy not in STRATEGIES:
        raise ScenarioError("sampling.strategy", f"must be one of {', '.join(STRATEGIES)}")
    _number("sampling.temperature", t.temperature, 0.0, MAX_TEMPERATURE)
    if not 0.0 < t.top_p <= 1.0:
        raise ScenarioError("sampling.top_p", f"must be above 0 and at most 1, got {t.top_p:g}")
    if t.top_k > len(s.vocab):
        raise ScenarioError("sampling.top_k", f"is {t.top_k} but the vocabulary has {len(s.vocab)} "
                                              "words; use 0 to keep every word")
    _integer("sampling.top_k", t.top_k, 0, MAX_VOCAB)
    _integer("sampling.seed", t.seed, 0, MAX_SEED)
    return s
