"""The rule language: a head's attention rule as a small, safe boolean expression.

A rule such as ``k.pos % 2 == 0`` says which keys a query attends to. This module parses the
text with :mod:`ast`, checks every node against a whitelist, type-checks it (numbers, text,
true/false) and compiles it into a tree that is evaluated as vectorised torch operations over all
(query, key) pairs at once.

It never calls ``eval``/``exec`` and never looks anything up by a name taken from the text, so a
rule cannot run code, read files or reach Python objects. Length, node count and nesting depth are
bounded before any recursion happens, so no rule can hang or crash the process.

**Accepted means runnable.** The language has total semantics, so a rule the compiler accepts
never raises when it is evaluated, at any (query, key) pair:

* *Division and modulo by zero* (``//``, ``%``) are undefined at the pairs where the divisor is 0.
  Evaluation goes left to right as Python would, ``and``/``or`` included (``q.pos != 3 and
  k.pos // (q.pos - 3) == 0`` is never undefined), and the rule is **false** wherever the result
  is undefined. :meth:`Rule.evaluate_total` returns that mask beside the matches, so the engine
  records it and a page can say where it happened. A divisor that is always zero (``-0``,
  ``1 - 1``) is refused when the rule is compiled.
* *Whole numbers never wrap around.* Every whole-number subexpression gets a range from the known
  ranges of its inputs (``pos`` and ``n`` from 1 to ``MAX_POSITION``, literals as written) and
  a rule whose range could leave 64-bit integers is **refused** when it is compiled, with a
  message that says so; nothing saturates or wraps at run time. Numbers with a decimal point
  (``k.value``, ``1.5``, ``1e20``) are floating point and follow IEEE rules (overflow gives
  infinity, which compares like a number), so they cannot raise either.

This module parses and bounds a rule; :mod:`viz.core.rules.compiler` type-checks it, works out its
ranges and compiles it. What neither does: build Q and K, apply the causal mask or the softmax (see
:mod:`viz.core.engine.model`).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable

import torch

from .. import text as text_check
from .compiler import _KIND_WORDS, RuleError, Side, _Compiler, _Eval, _refuse
from .syntax import syntax_message
from ..limits import MAX_RULE_CHARS, MAX_RULE_DEPTH, MAX_RULE_NODES

__all__ = ["EXAMPLES", "RULE_LIBRARY", "MAX_RULE_CHARS", "Rule", "RuleError", "Side", "cache_safe_rule",
           "compile_rule"]

EXAMPLES = (
    "k.pos % 2 == 0",
    "k.pos == n",
    "k.pos == 1",
    "True",
    "k.pos == q.pos",
    "k.pos == q.pos - 1",
    "q.pos - k.pos < 3",
    'k.token in ("weather", "so")',
    "k.value > 5",
)

# Named rules people can pick from; the first five are the article's heads and their safe forms.
RULE_LIBRARY = {
    "even positions": "k.pos % 2 == 0",
    "last token (reads n)": "k.pos == n",
    "first token": "k.pos == 1",
    "every token": "True",
    "self": "k.pos == q.pos",
    "previous token": "k.pos == q.pos - 1",
    "window of 3": "q.pos - k.pos < 3",
    "same word earlier": "k.token == q.token and k.pos < q.pos",
    "values above 5": "k.value > 5",
    "nothing": "False",
}


@dataclass(frozen=True)
class Rule:
    """A checked, compiled rule. ``cacheable`` and ``key_only`` are what the engine needs to know."""

    source: str
    uses_query: bool  # mentions q.*: the score depends on the query, not only on the key
    uses_n: bool  # mentions n: the key depends on the sequence length when it was encoded
    divisions: tuple[str, ...]  # the `//` and `%` whose divisor can be zero, as written
    _evaluate: _Eval

    @property
    def cacheable(self) -> bool:
        """A key that reads ``n`` changes as the sequence grows, so a cached copy goes stale."""
        return not self.uses_n

    @property
    def key_only(self) -> bool:
        """Only the key decides: build Q = ones and K = ±1 rows literally."""
        return not self.uses_query

    @property
    def can_be_undefined(self) -> bool:
        """Some pair may divide by zero (the rule is false there); else never undefined."""
        return bool(self.divisions)

    def evaluate_total(self, query: Side | None, key: Side, n: torch.Tensor,
                       intern: Callable[[str], int]) -> tuple[torch.Tensor, torch.Tensor]:
        """(matches, undefined): two bool tensors of one broadcast shape. ``undefined`` marks the
        pairs where a division or modulo by zero decided the result; ``matches`` is False there."""
        if query is None and self.uses_query:
            raise TypeError("this rule reads q, so it needs a query side")
        value, undefined = self._evaluate(query, key, n, intern)
        value = value if value.dtype == torch.bool else value.bool()
        if undefined is None:
            return value, torch.zeros_like(value)
        value, undefined = torch.broadcast_tensors(value, undefined)
        return value & ~undefined, undefined

    def evaluate(self, query: Side | None, key: Side, n: torch.Tensor,
                 intern: Callable[[str], int]) -> torch.Tensor:
        """Boolean match tensor, broadcast from the shapes of ``query``/``key``/``n``; False
        wherever the rule is undefined (see :meth:`evaluate_total`)."""
        return self.evaluate_total(query, key, n, intern)[0]


def _check_size(tree: ast.AST) -> None:
    """Bound the tree's size and depth without recursion, before anything recurses over it."""
    count = 0
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_RULE_NODES:
            raise RuleError(f"rule is too complex (more than {MAX_RULE_NODES} parts)")
        if depth > MAX_RULE_DEPTH:
            raise _refuse(node, f"rule is nested too deeply (more than {MAX_RULE_DEPTH} levels)")
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


@functools.lru_cache(maxsize=1024)
def compile_rule(source: str) -> Rule:
    """Parse, check and compile ``source``; raise :class:`RuleError` if it is not allowed."""
    if not isinstance(source, str):
        raise RuleError("a rule must be text")
    if len(source) > MAX_RULE_CHARS:
        raise RuleError(f"rule is too long ({len(source):,} characters; the limit is {MAX_RULE_CHARS})")
    bad = text_check.first_unusable(source)
    if bad is not None:
        raise RuleError("a rule is one line of ordinary characters; "
                        + text_check.problem(source).replace(f"character {bad + 1} ", "the character here ", 1),
                        bad + 1)
    text = source.strip()
    if not text:
        raise RuleError("rule is empty; write a condition such as k.pos == 1, or True for every key")
    lead = len(source) - len(source.lstrip())
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        message, col = syntax_message(text, err)
        raise RuleError(message, None if col is None else col + lead) from None
    except (RecursionError, MemoryError, ValueError):
        raise RuleError("rule could not be parsed (too deeply nested)") from None
    _check_size(tree)
    try:
        compiler = _Compiler()
        node = compiler.node(tree.body)
    except RuleError as err:
        if err.column is not None and err.column > 0:
            raise RuleError(err.message, err.column + lead) from None
        raise
    if node.kind != "bool":
        raise RuleError(f"a rule must be a true/false condition, but this gives {_KIND_WORDS[node.kind]}; "
                        "compare it with something, e.g. k.pos == 1")
    return Rule(source=source, uses_query=compiler.uses_query, uses_n=compiler.uses_n,
                divisions=tuple(compiler.divisions), _evaluate=node.fn)


def cache_safe_rule(source: str) -> str:
    """The cache-safe form of a rule: every ``n`` replaced by ``q.pos``.

    For the newest query the two are equal (``n`` is the length, the query is the last token), so
    the prediction after prefill is unchanged; but ``q.pos`` belongs to the query, so cached keys no
    longer go stale. ``k.pos == n`` ("the last token") becomes ``k.pos == q.pos`` ("attend to self").
    """
    rule = compile_rule(source)
    if rule.cacheable:
        return source
    tree = ast.parse(source.strip(), mode="eval")

    class _Swap(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id != "n":
                return node
            return ast.copy_location(ast.Attribute(value=ast.Name("q", ast.Load()), attr="pos",
                                                   ctx=ast.Load()), node)

    return ast.unparse(_Swap().visit(tree))
