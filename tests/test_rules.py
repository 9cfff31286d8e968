"""Tier 1: the rule language accepts the design document's examples, evaluates them right and refuses the rest fast."""

from __future__ import annotations

import pytest
import torch

from viz.core.engine import Side
from viz.core.rules import EXAMPLES, MAX_RULE_CHARS, RuleError, compile_rule

TOKENS = ["Today", "weather", "is", "so"]
IDS = {t: i for i, t in enumerate(TOKENS)}


def intern(text: str) -> int:
    return IDS.setdefault(text, len(IDS))


def matrix(rule: str, values=(10.0, 20.0, 1.0, 5.0), n: int = 4) -> list[list[bool]]:
    """The rule's (query, key) match matrix over the seed prompt."""
    pos = torch.arange(1, 5)
    token = torch.tensor([IDS[t] for t in TOKENS])
    value = torch.tensor(values, dtype=torch.float64)
    q = Side(pos[:, None], token[:, None], value[:, None])
    k = Side(pos[None, :], token[None, :], value[None, :])
    return compile_rule(rule).evaluate(q, k, torch.full((1, 4), n), intern).expand(4, 4).int().tolist()


@pytest.mark.parametrize("rule", EXAMPLES)
def test_design_examples_are_accepted(rule):
    """Every example rule in docs/design.md compiles."""
    assert compile_rule(rule).source == rule


@pytest.mark.parametrize("rule, row", [
    ("k.pos % 2 == 0", [0, 1, 0, 1]),
    ("k.pos == n", [0, 0, 0, 1]),
    ("k.pos == 1", [1, 0, 0, 0]),
    ("True", [1, 1, 1, 1]),
    ("true and not false", [1, 1, 1, 1]),
    ('k.token in ("weather", "so")', [0, 1, 0, 1]),
    ('k.token not in ["weather", "so"]', [1, 0, 1, 0]),
    ("k.value > 5", [1, 1, 0, 0]),
    ("k.value in (1, 5.0)", [0, 0, 1, 1]),
    ("2 <= k.pos < 4", [0, 1, 1, 0]),
    ("-k.pos // 2 == -1", [1, 1, 0, 0]),
    ("abs(k.pos - 3) <= 1 or k.token == 'Today'", [1, 1, 1, 1]),
    ("(k.pos > 1) == (k.value > 1)", [0, 1, 0, 1]),
])
def test_key_rules_select_the_right_keys(rule, row):
    """Key-only rules give the same row for every query."""
    assert matrix(rule) == [row] * 4


def test_query_rules():
    """Rules reading q compare each query with each key."""
    assert matrix("k.pos == q.pos") == [[int(i == j) for j in range(4)] for i in range(4)]
    assert matrix("k.pos == q.pos - 1") == [[int(j == i - 1) for j in range(4)] for i in range(4)]
    assert matrix("q.pos - k.pos < 3") == [[int(i - j < 3) for j in range(4)] for i in range(4)]
    assert matrix("k.value > q.value") == [[int(b > a) for b in (10, 20, 1, 5)] for a in (10, 20, 1, 5)]


def test_cacheable_and_key_only_flags():
    """A rule is cacheable unless it reads n; key-only unless it reads q."""
    assert not compile_rule("k.pos == n").cacheable
    assert compile_rule("k.pos == q.pos").cacheable and not compile_rule("k.pos == q.pos").key_only
    assert compile_rule("k.pos % 2 == 0").key_only
    assert not compile_rule("q.pos < n").cacheable


def test_float_values_compare_exactly():
    """k.value is compared in float64, so 0.1 > 0.1 is false (no float32 rounding)."""
    assert matrix("k.value > 0.1", values=(0.1, 0.2, 0.1, 0.3)) == [[0, 1, 0, 1]] * 4


def test_division_by_zero_at_evaluation_is_a_rule_error():
    """A divisor that turns out to be zero is reported, not a crash."""
    with pytest.raises(RuleError, match="division by zero"):
        matrix("k.pos % (q.pos - q.pos) == 0")


HOSTILE = [
    ("__import__('os').system('echo hi')", "call '__import__"),
    ("k.__class__", "attribute 'k.__class__' is not allowed"),
    ("k.pos.__class__.__mro__", "attribute"),
    ("q.__dict__", "attribute 'q.__dict__'"),
    ("lambda: 1", "lambda is not allowed"),
    ("[x for x in (1, 2)]", "list comprehension"),
    ("(x for x in (1,))", "generator expression"),
    ("9**9**9", "operator '**' is not allowed"),
    ("k.pos / 2 == 1", "operator '/' is not allowed"),
    ("(" * 10_000 + "1" + ")" * 10_000, "too long"),
    ("'" + "a" * 1_000_000 + "' == k.token", "too long"),
    ("not " * 60 + "True", "nested too deeply"),
    ("open('/etc/passwd')", "call 'open"),
    ("getattr(k, 'pos') == 1", "call 'getattr"),
    ("k.pos[0] == 1", "indexing"),
    ("k.pos if True else 1", "conditional expression"),
    ("k.pos == 1; import os", "syntax error"),
    ("True\nimport os", "one line"),
    ("k.token == f'{k}'", "f-string"),
    ("{1: 2}", "dict literal"),
    ("k.pos is 1", "'is' is not allowed"),
    ("x == 1", "name 'x' is not allowed"),
    ("k.foo == 1", "attribute 'k.foo'"),
    ("k.pos", "true/false condition"),
    ("k.pos == 'a'", "cannot compare"),
    ("k.token < 'b'", "only allows == and !="),
    ("k.pos % 0 == 1", "division by zero"),
    ("k.pos == 10**20", "operator '**'"),
    ("k.pos == 99999999999999999999", "too large"),
    ("k.token == b'x'", "constant b'x'"),
    ("", "empty"),
    ("k.pos == 1 and", "syntax error"),
    ("abs(k.pos, 2) == 1", "abs takes exactly one"),
    ("k.pos in k.pos", "needs a list of literals"),
    ("k.pos in (q.pos,)", "literals"),
    ("True + 1 == 2", "needs numbers"),
]


@pytest.mark.parametrize("rule, message", HOSTILE)
def test_hostile_rules_are_refused_with_a_message(rule, message):
    """Each hostile rule is refused, and the message names the problem."""
    with pytest.raises(RuleError) as info:
        compile_rule(rule)
    assert message in str(info.value)


@pytest.mark.parametrize("rule", ["(" * 10_000 + "1" + ")" * 10_000, "'" + "a" * 1_000_000 + "'",
                                  "k.pos == 1 " + "and True " * 100])
def test_oversized_rules_are_refused_before_parsing(rule, monkeypatch):
    """Huge or deeply nested text never reaches the parser, so it cannot be slow or crash it."""
    def no_parse(*args, **kwargs):
        raise AssertionError("parsed an oversized rule")
    monkeypatch.setattr("viz.core.rules.ast.parse", no_parse)
    compile_rule.cache_clear()
    with pytest.raises(RuleError, match="too long"):
        compile_rule(rule)


def test_node_and_depth_limits_hold_without_recursion():
    """Rules under the length limit but with too many parts or levels are refused by size checks."""
    with pytest.raises(RuleError, match="too complex"):
        compile_rule(" or ".join(["k.pos==1"] * 30))
    with pytest.raises(RuleError, match="nested too deeply"):
        compile_rule("-" * 100 + "k.pos == 1")


def test_refusal_names_the_column():
    """The message gives the 1-based column of the refused construct."""
    with pytest.raises(RuleError) as info:
        compile_rule("k.pos == 1 and k.__class__")
    assert info.value.column == 16
    assert str(info.value) == ("attribute 'k.__class__' is not allowed (use pos, token or value of q "
                               "or k) (column 16)")
    with pytest.raises(RuleError) as info:
        compile_rule("   lambda: 1")
    assert info.value.column == 4


def test_length_limit_is_stated():
    """A rule at the limit is read; one character more is refused."""
    ok = "k.pos == 1" + " " * (MAX_RULE_CHARS - 10)
    compile_rule(ok)
    with pytest.raises(RuleError, match=str(MAX_RULE_CHARS)):
        compile_rule(ok + " ")
