"""Hypothesis strategies for random rules and random accepted scenarios, shared by the property
tests (test_totality.py) and the share-link fuzzer (test_hostile_links.py).

The grammar deliberately produces what breaks naive evaluators: division and modulo by
expressions that are zero at some pairs (``q.pos - 3``, ``k.pos - k.pos``), products that grow
past 64 bits, chained comparisons, ``in`` lists, and guards such as ``q.pos != 3 and …``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from viz.core.rules.language import RuleError, compile_rule
from viz.core.engine.scenario import Head, Sampling, Scenario, ScenarioError, VocabWord

WORDS = ("Today", "weather", "is", "so", "a", "nice")
SMALL_INTS = st.integers(-6, 6).map(str)
BIG_INTS = st.sampled_from(["1000000", "1000000000000", "1000000000000000", "-1000000000000000"])
FLOATS = st.sampled_from(["0.5", "1.5", "-2.5", "0.0", "1e15", "1e300", "3.0"])

_int_leaf = st.sampled_from(["k.pos", "q.pos", "n"]) | SMALL_INTS | BIG_INTS
_float_leaf = st.sampled_from(["k.value", "q.value"]) | FLOATS


def _arith(children):
    op = st.sampled_from(["+", "-", "*", "//", "%"])
    return (st.tuples(children, op, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
            | children.map(lambda c: f"-{c}") | children.map(lambda c: f"abs({c})"))


NUMBERS = st.recursive(_int_leaf | _float_leaf, _arith, max_leaves=6)
# Divisors that are zero at some pairs and not at others (or everywhere, or never).
DIVISORS = st.sampled_from(["(q.pos - 3)", "(k.pos - k.pos)", "(k.pos - 2)", "(n - k.pos)", "(k.value - 20)",
                            "(q.pos - k.pos)", "(k.value - q.value)", "(k.pos % 2)", "(n - 5)"]) | NUMBERS
_compare = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
_division = st.tuples(NUMBERS, st.sampled_from(["//", "%"]), DIVISORS, _compare, SMALL_INTS).map(lambda t: f"{t[0]} {t[1]} {t[2]} {t[3]} {t[4]}")
_guard = st.tuples(st.sampled_from(["q.pos != 3", "k.pos != k.pos", "k.pos == 2", "n > 5", "q.pos == k.pos"]),
                   st.sampled_from(["and", "or"]), _division).map(" ".join)
_text = st.sampled_from(["k.token", "q.token"]) | st.sampled_from(WORDS).map(repr)
_number_list = st.lists(SMALL_INTS | FLOATS, min_size=1, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ",)")
_word_list = st.lists(st.sampled_from(WORDS).map(repr), min_size=1, max_size=3).map(
    lambda xs: "[" + ", ".join(xs) + "]")
_atoms = (
    _division | _guard |
    st.tuples(NUMBERS, _compare, NUMBERS).map(" ".join)
    | st.tuples(NUMBERS, _compare, NUMBERS, _compare, NUMBERS).map(" ".join)  # chains
    | st.tuples(_text, st.sampled_from(["==", "!="]), _text).map(" ".join)
    | st.tuples(NUMBERS, st.sampled_from(["in", "not in"]), _number_list).map(" ".join)
    | st.tuples(_text, st.sampled_from(["in", "not in"]), _word_list).map(" ".join)
    | st.sampled_from(["True", "False", "true", "false"])
)
RULES = st.recursive(
    _atoms,
    lambda inner: (st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
                   | inner.map(lambda r: f"not ({r})")),
    max_leaves=4,
)


def accepted(rule: str) -> bool:
    """True if the compiler accepts the rule (a refusal is a RuleError, never anything else)."""
    try:
        compile_rule(rule)
    except RuleError:
        return False
    return True


ACCEPTED_RULES = RULES.filter(accepted)


@st.composite
def scenarios(draw, max_tokens: int = 6, max_heads: int = 3, max_vocab: int = 3) -> Scenario:
    """A small accepted scenario whose heads use random accepted rules."""
    n = draw(st.integers(1, max_tokens))
    tokens = draw(st.lists(st.sampled_from(WORDS), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-30, 30).map(float), min_size=n, max_size=n))
    rules = draw(st.lists(ACCEPTED_RULES, min_size=1, max_size=max_heads))
    heads = tuple(Head(f"h{i}", rule) for i, rule in enumerate(rules))
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=max_vocab, unique=True))
    weight = st.integers(-4, 4).map(lambda w: w / 4)
    vocab = tuple(VocabWord(w, draw(st.integers(-30, 30).map(float)),
                            tuple(draw(weight) for _ in heads)) for w in words)
    sampling = Sampling(strategy=draw(st.sampled_from(["greedy", "sample"])),
                        temperature=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])), seed=draw(st.integers(0, 99)))
    try:
        return Scenario(tuple(tokens), tuple(values), heads, vocab, d_k=draw(st.sampled_from([1, 2, 4, 16])),
                        sampling=sampling).validated()
    except ScenarioError as err:  # the strategy only builds valid scenarios; say why if not
        raise AssertionError(f"the strategy built an invalid scenario: {err}") from None
