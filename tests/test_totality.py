"""Tier 1: accepted means runnable. Random accepted rules agree pair by pair with Python's own
arithmetic (a ZeroDivisionError there is "undefined, so false" here), and random accepted scenarios
run through prefill and many decode steps in all three modes without an exception.
"""

from __future__ import annotations

import ast

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile_text import record
from rule_grammar import RULES, WORDS, scenarios
from viz import MODES, generate, load_preset
from viz.core.engine.model import Side
from viz.core.rules.language import RuleError, compile_rule
from viz.core.engine.scenario import Head, ScenarioError

FAST = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
ORACLE_EXAMPLES = 1500
SCENARIO_EXAMPLES = 400


class Undefined(Exception):
    """Python raised ZeroDivisionError: the pair is undefined."""


def python_value(node: ast.AST, q: dict, k: dict, n: int):
    """The rule evaluated by plain Python for one (query, key) pair: the oracle."""
    match node:
        case ast.Expression(body=body):
            return python_value(body, q, k, n)
        case ast.Constant(value=value):
            return value
        case ast.Name(id="n"):
            return n
        case ast.Name(id=name):
            return name == "true"
        case ast.Attribute(value=ast.Name(id=side), attr=attr):
            return (q if side == "q" else k)[attr]
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return not python_value(operand, q, k, n)
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -python_value(operand, q, k, n)
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return python_value(operand, q, k, n)
        case ast.Call(args=[arg]):
            return abs(python_value(arg, q, k, n))
        case ast.BoolOp(op=op, values=values):
            for value in values:  # Python's own short circuit
                result = python_value(value, q, k, n)
                if isinstance(op, ast.And) != bool(result):
                    return result
            return result
        case ast.BinOp(left=left, op=op, right=right):
            a, b = python_value(left, q, k, n), python_value(right, q, k, n)
            try:
                return {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                        ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b}[type(op)]()
            except ZeroDivisionError:
                raise Undefined from None
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            a = python_value(left, q, k, n)
            for op, right in zip(ops, comparators):
                if isinstance(op, (ast.In, ast.NotIn)):  # numbers compare as floating point here
                    pool = [python_value(e, q, k, n) for e in right.elts]
                    if not isinstance(a, str):
                        a, pool = float(a), [float(x) for x in pool]
                    result = (a in pool) != isinstance(op, ast.NotIn)
                else:
                    b = python_value(right, q, k, n)
                    if isinstance(a, float) != isinstance(b, float) and not isinstance(a, (str, bool)):
                        a, b = float(a), float(b)  # a whole number meets a decimal: floating point
                    result = {ast.Eq: a == b, ast.NotEq: a != b, ast.Lt: a < b, ast.LtE: a <= b,
                              ast.Gt: a > b, ast.GtE: a >= b}[type(op)]
                    a = b
                if not result:
                    return False
            return True
    raise AssertionError(f"the oracle does not know {ast.dump(node)}")


def oracle(rule: str, tokens: list[str], values: list[float], n: int) -> tuple[list[list[bool]], list[list[bool]]]:
    tree = ast.parse(rule.strip(), mode="eval")
    sides = [{"pos": i + 1, "token": t, "value": v} for i, (t, v) in enumerate(zip(tokens, values))]
    match, undefined = [], []
    for q in sides:
        match.append([]), undefined.append([])
        for k in sides:
            try:
                match[-1].append(bool(python_value(tree, q, k, n)))
                undefined[-1].append(False)
            except Undefined:
                match[-1].append(False)
                undefined[-1].append(True)
    return match, undefined


@settings(max_examples=ORACLE_EXAMPLES, **FAST)
@given(RULES, st.lists(st.tuples(st.sampled_from(WORDS), st.integers(-25, 25)), min_size=1, max_size=6),
       st.integers(1, 8))
def test_accepted_rules_agree_with_python_pair_by_pair(rule, items, n):
    """Every (query, key) pair: the same truth value as Python, and undefined exactly where Python
    raises ZeroDivisionError (evaluating left to right, `and`/`or` short-circuiting). A rule the
    compiler refuses (a divisor always 0, whole numbers past 64 bits) is refused with a message."""
    category = "Rules from the grammar (zero divisors, big products, chains, in) vs Python, pair by pair"
    try:
        compiled = compile_rule(rule)
    except RuleError as err:
        assert err.message and ("always 0" in err.message or "64-bit" in err.message), err
        record(category, "refused")
        return
    tokens = [t for t, _ in items]
    values = [float(v) for _, v in items]
    ids = {t: i for i, t in enumerate(dict.fromkeys(tokens + list(WORDS)))}
    pos = torch.arange(1, len(tokens) + 1)
    token = torch.tensor([ids[t] for t in tokens])
    value = torch.tensor(values, dtype=torch.float64)
    q, k = Side(pos[:, None], token[:, None], value[:, None]), Side(pos[None, :], token[None, :], value[None, :])
    match, undefined = compiled.evaluate_total(q, k, torch.tensor(n), lambda text: ids.setdefault(text, len(ids)))
    shape = (len(tokens), len(tokens))
    expected_match, expected_undefined = oracle(rule, tokens, values, n)
    assert match.expand(shape).tolist() == expected_match, rule
    assert undefined.expand(shape).tolist() == expected_undefined, rule
    if not compiled.can_be_undefined:
        assert not any(map(any, expected_undefined))
    record(category, "ran")


def undefined(attention) -> torch.Tensor:
    """Where a rule divided by zero, (heads, m, len); the engine keeps None when no rule can."""
    return attention.undefined if attention.undefined is not None else torch.zeros_like(attention.matches)


@settings(max_examples=SCENARIO_EXAMPLES, **FAST)
@given(scenarios(), st.integers(1, 7))
def test_accepted_scenarios_run_in_every_mode(scenario, steps):
    """Prefill and every decode step run in all three modes; undefined pairs never match; the
    modes agree where they must (the prefill always, and every step when no head reads n)."""
    traces = {mode: generate(scenario, steps, mode) for mode in MODES}
    for trace in traces.values():
        assert len(trace.steps) == steps
        attentions = [trace.prefill.attention] + [step.attention for step in trace.steps]
        for attention in attentions:
            assert undefined(attention).shape == attention.matches.shape
            assert not bool((undefined(attention) & attention.matches).any())
            assert bool(torch.isfinite(attention.contexts).all())
    first = traces["recompute"].prefill.attention
    for trace in traces.values():
        assert torch.equal(undefined(trace.prefill.attention), undefined(first))
    if all(traces["kv"].cacheable):
        for a, b in zip(traces["kv"].steps, traces["recompute"].steps):
            assert torch.equal(undefined(a.attention), undefined(b.attention))
            assert torch.allclose(a.context, b.context, atol=1e-5)
    record("Random accepted scenarios: prefill and up to 7 decode steps in all 3 modes", "ran")


REPRODUCTIONS = [  # issue 10: each crashed a page before; now each runs, or is refused with a message
    "k.pos // (q.pos - 3) == 0",
    "k.pos % -0 == 1",
    "k.pos % (k.pos - k.pos) == 0",
    "k.value // (k.value - 20) == 0",
    "k.pos // (k.pos - 5) == 0",
    "k.pos * 1000000000000000 * 1000000000000000 > 0",
]


@pytest.mark.parametrize("rule", REPRODUCTIONS)
def test_issue_reproductions_run_or_are_refused(rule):
    """Each reproduction is refused with a message, or runs prefill and 12 decode steps in every mode."""
    seed = load_preset("seed")
    try:
        scenario = seed.with_heads([Head("x", rule), *seed.heads[1:]], [0, 1, 2, 3])
    except ScenarioError as err:
        assert "heads[0].rule" in str(err) and err.message
        record("The issue's rule reproductions (each through 12 decode steps, 3 modes)", "refused")
        return
    for mode in MODES:
        trace = generate(scenario, 12, mode)
        assert len(trace.steps) == 12
    record("The issue's rule reproductions (each through 12 decode steps, 3 modes)", "ran")


def test_reproductions_that_run_report_where_they_divided_by_zero():
    """The undefined pairs are the ones where the divisor is zero, in prefill and during decode."""
    seed = load_preset("seed")
    scenario = seed.with_heads([Head("x", "k.pos // (k.pos - 5) == 0"), *seed.heads[1:]], [0, 1, 2, 3])
    for mode in MODES:
        trace = generate(scenario, 3, mode)
        assert not bool(undefined(trace.prefill.attention).any())  # 4 prompt tokens: no key 5 yet
        assert undefined(trace.steps[1].attention)[0, 0].tolist() == [False] * 4 + [True]  # key 5 arrives
    scenario = seed.with_heads([Head("x", "k.pos // (q.pos - 3) == 0"), *seed.heads[1:]], [0, 1, 2, 3])
    where = undefined(generate(scenario, 1).prefill.attention)[0]  # (queries, keys)
    assert where.tolist() == [[q == 3] * 4 for q in range(1, 5)]
    for rule in ("k.pos % -0 == 1", "k.pos * 1000000000000000 * 1000000000000000 > 0"):
        with pytest.raises(ScenarioError):
            seed.with_heads([Head("x", rule), *seed.heads[1:]], [0, 1, 2, 3])


def test_divisions_by_zero_are_told_by_head_and_position():
    """The page's sentence names the head, the division and the visible pairs, for prefill and a step."""
    from viz.core.engine.division import divisions_by_zero

    seed = load_preset("seed")
    scenario = seed.with_heads([Head("x", "k.pos // (q.pos - 3) == 0"), Head("y", "k.value // (k.value - 20) == 0"),
                                *seed.heads[2:]], [0, 1, 2, 3])
    trace = generate(scenario, 3, "kv")
    x, y = divisions_by_zero(trace)
    assert (x.head, x.divisions, x.queries, x.keys, x.pairs) == ("x", ("k.pos // (q.pos - 3)",), (3,), (1, 2, 3), 3)
    assert "query 3 · is; keys 1 · Today, 2 · weather, 3 · is" in x.text and "during prefill" in x.text
    assert (y.queries, y.keys, y.pairs) == ((2, 3, 4), (2,), 3)  # key 2 is visible from query 2 on
    (step,) = divisions_by_zero(trace, 2)
    assert step.head == "y" and step.queries == (6,) and step.keys == (2,) and "at decode step 2" in step.text
    assert divisions_by_zero(generate(seed, 3), 1) == []
