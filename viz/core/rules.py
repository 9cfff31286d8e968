"""The rule language: a head's attention rule as a small, safe boolean expression.

A rule such as ``k.pos % 2 == 0`` says which keys a query attends to. This module parses the
text with :mod:`ast`, checks every node against a whitelist, type-checks it (numbers, text,
true/false) and compiles it into a tree that is evaluated as vectorised torch operations over all
(query, key) pairs at once.

It never calls ``eval``/``exec`` and never looks anything up by a name taken from the text, so a
rule cannot run code, read files or reach Python objects. Length, node count and nesting depth are
bounded before any recursion happens, so no rule can hang or crash the process.

What this module does not do: build Q and K, apply the causal mask or the softmax (see
:mod:`viz.core.engine`).
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from typing import Callable, Protocol

import torch

MAX_RULE_CHARS = 400  # longer texts are refused before parsing
MAX_RULE_NODES = 200  # syntax-tree nodes after parsing
MAX_RULE_DEPTH = 24  # nesting depth of the syntax tree
MAX_LITERAL_CHARS = 100  # length of one string literal
MAX_INT_LITERAL = 10**15  # whole-number literals are kept well inside int64

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

# Attribute types, as the type checker sees them.
ATTRIBUTES = {"pos": "int", "token": "str", "value": "float"}
_NUMBER = ("int", "float")

# Friendly names for the syntax the language refuses.
_CONSTRUCT_NAMES = {
    ast.Lambda: "lambda",
    ast.ListComp: "list comprehension",
    ast.SetComp: "set comprehension",
    ast.DictComp: "dict comprehension",
    ast.GeneratorExp: "generator expression",
    ast.Subscript: "indexing or slicing",
    ast.Slice: "slicing",
    ast.IfExp: "conditional expression (x if c else y)",
    ast.NamedExpr: "assignment expression (:=)",
    ast.JoinedStr: "f-string",
    ast.FormattedValue: "f-string",
    ast.Dict: "dict literal",
    ast.Set: "set literal",
    ast.Starred: "starred expression",
    ast.Await: "await",
    ast.Yield: "yield",
    ast.YieldFrom: "yield",
}
_OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.Invert: "~",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.USub: "-", ast.UAdd: "+", ast.Not: "not",
}
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
_OPERATOR_HINTS = {
    ast.Div: " (use // for whole-number division)",
    ast.Pow: " (write the product out, e.g. k.pos * k.pos)",
    ast.BitAnd: " (use 'and')",
    ast.BitOr: " (use 'or')",
    ast.Invert: " (use 'not')",
    ast.Is: " (use ==)",
    ast.IsNot: " (use !=)",
}


class RuleError(ValueError):
    """A rule that is refused, with a message that says what and where (1-based column)."""

    def __init__(self, message: str, column: int | None = None):
        self.message = message
        self.column = column
        super().__init__(message if column is None else f"{message} (column {column})")


class Side(Protocol):
    """What a rule can read about the query or the key side: broadcastable tensors."""

    pos: torch.Tensor  # int64
    token: torch.Tensor  # int64 ids from the same `intern` as the rule's string literals
    value: torch.Tensor  # float64


# A compiled node: a function of (query side, key side, n, intern) -> tensor.
_Eval = Callable[["Side | None", "Side", torch.Tensor, Callable[[str], int]], torch.Tensor]


@dataclass(frozen=True)
class Rule:
    """A checked, compiled rule. ``cacheable`` and ``key_only`` are what the engine needs to know."""

    source: str
    uses_query: bool  # mentions q.*: the score depends on the query, not only on the key
    uses_n: bool  # mentions n: the key depends on the sequence length when it was encoded
    _evaluate: _Eval

    @property
    def cacheable(self) -> bool:
        """A key that reads ``n`` changes as the sequence grows, so a cached copy goes stale."""
        return not self.uses_n

    @property
    def key_only(self) -> bool:
        """Only the key decides: build Q = ones and K = ±1 rows literally."""
        return not self.uses_query

    def evaluate(self, query: Side | None, key: Side, n: torch.Tensor,
                 intern: Callable[[str], int]) -> torch.Tensor:
        """Boolean match tensor, broadcast from the shapes of ``query``/``key``/``n``."""
        if query is None and self.uses_query:
            raise RuleError("this rule reads q, so it needs a query side")
        out = self._evaluate(query, key, n, intern)
        return out if out.dtype == torch.bool else out.bool()


def _refuse(node: ast.AST, message: str) -> RuleError:
    return RuleError(message, getattr(node, "col_offset", -1) + 1)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


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
    text = source.strip()
    if not text:
        raise RuleError("rule is empty; write a condition such as k.pos == 1, or True for every key")
    for i, ch in enumerate(source):
        if ch in "\n\r" or (ord(ch) < 32 and ch != "\t") or ord(ch) == 127:
            raise RuleError("a rule is one line without control characters", i + 1)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        col = err.offset + len(source) - len(source.lstrip()) if err.offset else None
        raise RuleError(f"syntax error: {err.msg}", col) from None
    except (RecursionError, MemoryError, ValueError):
        raise RuleError("rule could not be parsed (too deeply nested)") from None
    _check_size(tree)
    lead = len(source) - len(source.lstrip())
    try:
        compiler = _Compiler()
        kind, fn = compiler.node(tree.body)
    except RuleError as err:
        if err.column is not None and err.column > 0:
            raise RuleError(err.message, err.column + lead) from None
        raise
    if kind != "bool":
        raise RuleError(f"a rule must be a true/false condition, but this gives {_KIND_WORDS[kind]}; "
                        "compare it with something, e.g. k.pos == 1")
    return Rule(source=source, uses_query=compiler.uses_query, uses_n=compiler.uses_n, _evaluate=fn)


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


_KIND_WORDS = {"int": "a whole number", "float": "a number", "str": "text", "bool": "true/false"}


def _tensor(value: object) -> torch.Tensor:
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    return torch.tensor(value, dtype=torch.float64)


class _Compiler:
    """Type-checks the syntax tree and turns it into nested closures over torch operations."""

    def __init__(self) -> None:
        self.uses_query = False
        self.uses_n = False

    def node(self, node: ast.AST) -> tuple[str, _Eval]:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            name = _CONSTRUCT_NAMES.get(type(node))
            if name is None:
                name = f"'{_shown(node)}'" if isinstance(node, ast.expr) else type(node).__name__
            raise _refuse(node, f"{name} is not allowed")
        return method(node)

    # -- leaves -----------------------------------------------------------------------------
    def _Constant(self, node: ast.Constant) -> tuple[str, _Eval]:
        value = node.value
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int):
            if abs(value) > MAX_INT_LITERAL:
                raise _refuse(node, f"number {_shown(node)} is too large (limit {MAX_INT_LITERAL:.0e})")
            kind = "int"
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise _refuse(node, f"number {_shown(node)} is not finite")
            kind = "float"
        elif isinstance(value, str):
            if len(value) > MAX_LITERAL_CHARS:
                raise _refuse(node, f"text literal is too long (limit {MAX_LITERAL_CHARS} characters)")
            return "str", lambda q, k, n, intern: torch.tensor(intern(value), dtype=torch.int64)
        else:
            raise _refuse(node, f"constant {_shown(node)} is not allowed")
        constant = _tensor(value)
        return kind, lambda q, k, n, intern: constant

    def _Name(self, node: ast.Name) -> tuple[str, _Eval]:
        if node.id == "n":
            self.uses_n = True
            return "int", lambda q, k, n, intern: n
        if node.id in ("true", "false"):
            constant = torch.tensor(node.id == "true")
            return "bool", lambda q, k, n, intern: constant
        if node.id in ("q", "k"):
            raise _refuse(node, f"'{node.id}' needs an attribute: {node.id}.pos, {node.id}.token or {node.id}.value")
        raise _refuse(node, f"name '{_shown(node)}' is not allowed (use q.…, k.…, n, True or False)")

    def _Attribute(self, node: ast.Attribute) -> tuple[str, _Eval]:
        owner = node.value
        if not (isinstance(owner, ast.Name) and owner.id in ("q", "k") and node.attr in ATTRIBUTES):
            raise _refuse(node, f"attribute '{_shown(node)}' is not allowed "
                                "(use pos, token or value of q or k)")
        attr = node.attr
        if owner.id == "q":
            self.uses_query = True
            return ATTRIBUTES[attr], lambda q, k, n, intern: getattr(q, attr)
        return ATTRIBUTES[attr], lambda q, k, n, intern: getattr(k, attr)

    # -- operators --------------------------------------------------------------------------
    def _BinOp(self, node: ast.BinOp) -> tuple[str, _Eval]:
        op = type(node.op)
        if op not in _ARITHMETIC:
            hint = _OPERATOR_HINTS.get(op, "")
            raise _refuse(node, f"operator '{_OPERATORS.get(op, op.__name__)}' is not allowed{hint}")
        lkind, left = self.node(node.left)
        rkind, right = self.node(node.right)
        symbol = _OPERATORS[op]
        for kind in (lkind, rkind):
            if kind not in _NUMBER:
                raise _refuse(node, f"'{symbol}' needs numbers on both sides, not {_KIND_WORDS[kind]}")
        kind = "int" if lkind == rkind == "int" else "float"
        if op in (ast.FloorDiv, ast.Mod):
            if isinstance(node.right, ast.Constant) and node.right.value == 0:
                raise _refuse(node.right, "division by zero")
            col = node.right.col_offset + 1

            def divide(q, k, n, intern, op=op):
                a, b = left(q, k, n, intern), right(q, k, n, intern)
                if bool((b == 0).any()):
                    raise RuleError("division by zero while evaluating the rule", col)
                return torch.remainder(a, b) if op is ast.Mod else torch.div(a, b, rounding_mode="floor")

            return kind, divide
        torch_op = {ast.Add: torch.add, ast.Sub: torch.sub, ast.Mult: torch.mul}[op]
        return kind, lambda q, k, n, intern: torch_op(left(q, k, n, intern), right(q, k, n, intern))

    def _UnaryOp(self, node: ast.UnaryOp) -> tuple[str, _Eval]:
        op = type(node.op)
        kind, inner = self.node(node.operand)
        if op is ast.Not:
            if kind != "bool":
                raise _refuse(node, f"'not' needs a true/false condition, not {_KIND_WORDS[kind]}")
            return "bool", lambda q, k, n, intern: torch.logical_not(inner(q, k, n, intern))
        if op in (ast.USub, ast.UAdd):
            if kind not in _NUMBER:
                raise _refuse(node, f"'{_OPERATORS[op]}' needs a number, not {_KIND_WORDS[kind]}")
            if op is ast.UAdd:
                return kind, inner
            return kind, lambda q, k, n, intern: torch.neg(inner(q, k, n, intern))
        raise _refuse(node, f"operator '{_OPERATORS.get(op, op.__name__)}' is not allowed"
                            f"{_OPERATOR_HINTS.get(op, '')}")

    def _BoolOp(self, node: ast.BoolOp) -> tuple[str, _Eval]:
        word = "and" if isinstance(node.op, ast.And) else "or"
        parts = []
        for value in node.values:
            kind, fn = self.node(value)
            if kind != "bool":
                raise _refuse(value, f"'{word}' needs true/false conditions, not {_KIND_WORDS[kind]}")
            parts.append(fn)
        combine = torch.logical_and if word == "and" else torch.logical_or

        def evaluate(q, k, n, intern):
            out = parts[0](q, k, n, intern)
            for part in parts[1:]:
                out = combine(out, part(q, k, n, intern))
            return out

        return "bool", evaluate

    def _Compare(self, node: ast.Compare) -> tuple[str, _Eval]:
        pairs = []
        lkind, left = self.node(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            op_type = type(op)
            symbol = _OPERATORS.get(op_type, op_type.__name__)
            if op_type in (ast.In, ast.NotIn):
                fn = self._membership(node, lkind, left, right_node, negate=op_type is ast.NotIn)
                pairs.append(fn)
                lkind, left = "bool", None  # a chain continuing after `in` is refused below
                continue
            if left is None:
                raise _refuse(node, f"'{symbol}' cannot follow an 'in' test; use 'and'")
            if op_type not in (ast.Eq, ast.NotEq) + _ORDER:
                raise _refuse(node, f"comparison '{symbol}' is not allowed{_OPERATOR_HINTS.get(op_type, '')}")
            rkind, right = self.node(right_node)
            numbers = lkind in _NUMBER and rkind in _NUMBER
            if not numbers and lkind != rkind:
                raise _refuse(node, f"cannot compare {_KIND_WORDS[lkind]} with {_KIND_WORDS[rkind]}")
            if op_type in _ORDER and not numbers:
                raise _refuse(node, f"'{symbol}' compares numbers; {_KIND_WORDS[lkind]} only allows == and !=")
            torch_op = {ast.Eq: torch.eq, ast.NotEq: torch.ne, ast.Lt: torch.lt, ast.LtE: torch.le,
                        ast.Gt: torch.gt, ast.GtE: torch.ge}[op_type]
            pairs.append(lambda q, k, n, intern, a=left, b=right, f=torch_op: f(a(q, k, n, intern),
                                                                                 b(q, k, n, intern)))
            lkind, left = rkind, right

        def evaluate(q, k, n, intern):
            out = pairs[0](q, k, n, intern)
            for pair in pairs[1:]:
                out = torch.logical_and(out, pair(q, k, n, intern))
            return out

        return "bool", evaluate

    def _membership(self, node: ast.Compare, lkind: str, left: _Eval | None, right: ast.AST,
                    negate: bool) -> _Eval:
        word = "not in" if negate else "in"
        if left is None:
            raise _refuse(node, f"'{word}' cannot follow another 'in' test; use 'and'")
        if not isinstance(right, (ast.Tuple, ast.List)):
            raise _refuse(right, f"'{word}' needs a list of literals, e.g. k.token in (\"a\", \"b\")")
        if not right.elts:
            raise _refuse(right, f"'{word}' needs at least one item")
        items = [self._literal(element) for element in right.elts]
        for element, item in zip(right.elts, items):
            same = (isinstance(item, str) and lkind == "str") or (
                not isinstance(item, (str, bool)) and lkind in _NUMBER) or (
                isinstance(item, bool) and lkind == "bool")
            if not same:
                raise _refuse(element, f"'{word}' compares {_KIND_WORDS[lkind]} with {_shown(element)}")
        text = lkind == "str"

        def evaluate(q, k, n, intern):
            a = left(q, k, n, intern)
            if text:
                pool = torch.tensor([intern(item) for item in items], dtype=torch.int64)
            else:  # numbers and true/false compare as float64, exact for every allowed literal
                pool, a = torch.tensor(items, dtype=torch.float64), a.to(torch.float64)
            found = torch.isin(a, pool)
            return torch.logical_not(found) if negate else found

        return evaluate

    def _literal(self, node: ast.AST) -> object:
        """A list item: a constant, or a negated number."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float):
            self._Constant(node.operand)
            return -node.operand.value
        if isinstance(node, ast.Constant):
            self._Constant(node)
            return node.value
        if isinstance(node, ast.Name) and node.id in ("true", "false"):
            return node.id == "true"
        raise _refuse(node, f"list items must be literals, not '{_shown(node)}'")

    def _Call(self, node: ast.Call) -> tuple[str, _Eval]:
        if not (isinstance(node.func, ast.Name) and node.func.id == "abs"):
            raise _refuse(node, f"call '{_shown(node.func)}(…)' is not allowed (only abs(x) is)")
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise _refuse(node, "abs takes exactly one number, e.g. abs(q.pos - k.pos)")
        kind, inner = self.node(node.args[0])
        if kind not in _NUMBER:
            raise _refuse(node, f"abs needs a number, not {_KIND_WORDS[kind]}")
        return kind, lambda q, k, n, intern: torch.abs(inner(q, k, n, intern))

    def _Tuple(self, node: ast.AST) -> tuple[str, _Eval]:
        raise _refuse(node, "a list is only allowed after 'in' or 'not in'")

    _List = _Tuple
