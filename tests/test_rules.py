"""Tier 1: the rule language accepts the design document's examples, evaluates them right and refuses the rest fast."""

from __future__ import annotations

import pytest
import torch

from viz.core.engine.model import Side
from viz.core.rules.language import EXAMPLES, MAX_RULE_CHARS, RuleError, compile_rule

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


def total(rule: str, n: int = 4) -> tuple[list[list[bool]], list[list[bool]]]:
    """The rule's (matches, undefined) matrices over the seed prompt."""
    pos = torch.arange(1, 5)
    token = torch.tensor([IDS[t] for t in TOKENS])
    value = torch.tensor((10.0, 20.0, 1.0, 5.0), dtype=torch.float64)
    q = Side(pos[:, None], token[:, None], value[:, None])
    k = Side(pos[None, :], token[None, :], value[None, :])
    match, undefined = compile_rule(rule).evaluate_total(q, k, torch.full((1, 4), n), intern)
    return match.expand(4, 4).int().tolist(), undefined.expand(4, 4).int().tolist()


def test_division_by_zero_at_a_pair_makes_the_rule_false_there():
    """A divisor that is zero at some pairs: false and marked undefined there, computed elsewhere."""
    match, undefined = total("k.pos // (q.pos - 3) == 0")
    assert undefined == [[0] * 4, [0] * 4, [1] * 4, [0] * 4]
    assert match == [[int(j // (i - 3) == 0) if i != 3 else 0 for j in range(1, 5)] for i in range(1, 5)]
    match, undefined = total("k.value // (k.value - 20) == -1")
    assert undefined == [[0, 1, 0, 0]] * 4 and match == [[1, 0, 1, 1]] * 4
    match, undefined = total("k.pos % (k.pos - k.pos) == 0")
    assert undefined == [[1] * 4] * 4 and match == [[0] * 4] * 4


def test_undefined_follows_python_evaluation_order():
    """`and`/`or` decide left to right as Python does: a guard before the division keeps it defined."""
    assert total("q.pos != 3 and k.pos // (q.pos - 3) == 0")[1] == [[0] * 4] * 4
    assert total("q.pos == 3 or k.pos % (q.pos - 3) == 0")[1] == [[0] * 4] * 4
    assert total("k.pos // (q.pos - 3) == 0 and q.pos != 3")[1][2] == [1] * 4
    match, undefined = total("not k.pos // (k.pos - 2) == 5")  # not of undefined is still undefined
    assert undefined == [[0, 1, 0, 0]] * 4 and match[0][1] == 0
    assert total("1 < k.pos // (k.pos - 2) < 9")[1] == [[0, 1, 0, 0]] * 4


def test_rules_that_cannot_divide_by_zero_are_never_undefined():
    """A divisor whose range excludes 0 (a non-zero literal, k.pos + 1) needs no run-time check."""
    for rule in ("k.pos % 2 == 0", "k.pos // (k.pos + 1) == 0", "k.value // 2.5 > 1", "k.pos % -3 == 0"):
        assert not compile_rule(rule).can_be_undefined, rule
    assert compile_rule("k.pos % (q.pos - 1) == 0").divisions == ("k.pos % (q.pos - 1)",)


@pytest.mark.parametrize("rule, message", [
    ("k.pos % -0 == 1", "'-0' is always 0"),
    ("k.pos // (2 - 2) == 1", "'2 - 2' is always 0"),
    ("k.value % 0.0 == 1", "is always 0"),
    ("k.pos % (0 * k.pos) == 1", "is always 0"),
    ("k.pos * 1000000000000000 * 1000000000000000 > 0", "beyond 64-bit whole numbers"),
    ("k.pos * k.pos * k.pos * k.pos * k.pos > 0", "wrap around"),
    ("n * 1000000000000000 == 1", "1e15 to compute in floating point"),
    ("abs(-1000000000000000 * 100000) > 0", "beyond 64-bit"),
])
def test_arithmetic_that_cannot_run_is_refused_when_compiled(rule, message):
    """A divisor that is always 0, or whole numbers that could wrap at 64 bits, are refused up front."""
    with pytest.raises(RuleError, match=message):
        compile_rule(rule)


def test_big_but_safe_arithmetic_is_exact():
    """Within 64 bits whole numbers are exact; with a decimal point they are floating point."""
    assert matrix("k.pos * 100000000000000 > 300000000000000") == [[0, 0, 0, 1]] * 4
    assert matrix("k.pos * 1e15 * 1e15 > 0") == [[1] * 4] * 4
    assert matrix("k.value * 1e300 * 1e300 > 0") == [[1] * 4] * 4  # overflows to infinity, still a number


@pytest.mark.parametrize("rule, message", [
    ("k.pos ==", "after `==` write a value, e.g. `k.pos == 1`"),
    ("k.pos == 1 and", "after `and` write a value"),
    ("k.pos %", "after `%` write a value, e.g. `k.pos % 2 == 0`"),
    ("k.", "after `.` write pos, token or value"),
    ("k.pos = 1", "use `==` to compare"),
    ("k.pos => 1", "write `>=`"),
    ("k.pos <> 1", "write `!=`"),
    ("k.pos && true", "write `and`"),
    ("k.pos 1", "between `k.pos` and `1` an operator is missing"),
    ("(k.pos == 1", "this `(` is never closed; add a `)`"),
    ("k.pos == 1)", "no opening bracket"),
    ("k.token == 'so", "never closed; end it with the same quote"),
    ("k.pos == 07", "without leading zeros"),
    ("2k == 1", "runs straight into letters"),
    ("k.pos == 1 …", "U+2026 cannot be used"),
    ("== 1", "`==` needs a value before it"),
    ("k.pos == $", "`$` cannot be used"),
])
def test_syntax_errors_are_explained_in_plain_words(rule, message):
    """A rule Python cannot parse gets a message that says what to write, not 'invalid syntax'."""
    with pytest.raises(RuleError) as info:
        compile_rule(rule)
    assert message in info.value.message and "invalid syntax" not in str(info.value)
    assert info.value.column is not None and 1 <= info.value.column <= len(rule) + 1


@pytest.mark.parametrize("code", [0xD800, 0xDFFF, 0xFFFE, 0xFDD0, 0x10FFFF, 0x00, 0x1B, 0x85])
def test_unusable_characters_are_refused(code):
    """Lone surrogates, non-characters and control characters are refused with the code point named."""
    with pytest.raises(RuleError, match=f"U\\+{code:04X}"):
        compile_rule(f"k.token == 'a{chr(code)}'")


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
    ("k.pos == 1; import os", "cannot be read at `;`"),
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
    monkeypatch.setattr("viz.core.rules.language.ast.parse", no_parse)
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
