"""The rule language's evaluator: a parsed rule type-checked, its whole numbers' ranges worked out,
and turned into nested closures over torch operations that return (value, undefined).

:mod:`viz.core.rules.language` parses a rule, bounds its size and calls :class:`_Compiler` here; the
semantics (total evaluation, no wrap-around) are described there and in docs/design.md.
"""

from __future__ import annotations

import ast
import functools
from typing import Callable, NamedTuple, Protocol

import torch

from .syntax import CONSTRUCT_NAMES, OPERATOR_HINTS, OPERATORS
from ..limits import INT64_MAX, MAX_INT_LITERAL, MAX_LITERAL_CHARS, MAX_POSITION

# Attribute types, as the type checker sees them.
ATTRIBUTES = {"pos": "int", "token": "str", "value": "float"}
_NUMBER = ("int", "float")

_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


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


class _Result(NamedTuple):
    """A subexpression's value and where it is undefined (None: defined everywhere)."""

    value: torch.Tensor
    undefined: torch.Tensor | None  # bool, broadcastable against value


# A compiled node: a function of (query side, key side, n, intern) -> _Result.
_Eval = Callable[["Side | None", "Side", torch.Tensor, Callable[[str], int]], _Result]


def _refuse(node: ast.AST, message: str) -> RuleError:
    return RuleError(message, getattr(node, "col_offset", -1) + 1)


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


_KIND_WORDS = {"int": "a whole number", "float": "a number", "str": "text", "bool": "true/false"}


# -- compiling -----------------------------------------------------------------------------------
def _tensor(value: object) -> torch.Tensor:
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    return torch.tensor(value, dtype=torch.float64)


def _either(a: torch.Tensor | None, b: torch.Tensor | None) -> torch.Tensor | None:
    """Undefined where either is (None stands for 'nowhere')."""
    if a is None:
        return b
    return a if b is None else a | b


class _Node(NamedTuple):
    """A compiled subexpression: its type, its evaluator and, for whole numbers, its range."""

    kind: str  # "int", "float", "str" or "bool"
    fn: _Eval
    low: float = -float("inf")  # for "int": the smallest value it can take; for a constant, its value
    high: float = float("inf")

    @property
    def constant(self) -> bool:
        return self.low == self.high


_ANY_POSITION = (1, MAX_POSITION)


def _range_of(op: type, a: _Node, b: _Node) -> tuple[float, float]:
    """The range of ``a op b`` from the ranges of a and b (whole numbers, or constants)."""
    if op is ast.Add:
        return a.low + b.low, a.high + b.high
    if op is ast.Sub:
        return a.low - b.high, a.high - b.low
    if op is ast.Mult:
        products = [x * y for x in (a.low, a.high) for y in (b.low, b.high)]
        return min(products), max(products)
    if op is ast.FloorDiv:  # |a // b| <= |a| for every divisor the result is computed with (|b| >= 1)
        if a.constant and b.constant and b.low != 0:
            quotient = a.low // b.low
            return quotient, quotient
        reach = max(abs(a.low), abs(a.high))
        return -reach, reach
    # ast.Mod: the remainder has the divisor's sign and is smaller than it
    if a.constant and b.constant and b.low != 0:
        remainder = a.low % b.low
        return remainder, remainder
    if b.low >= 0:
        return 0, max(b.high - 1, 0)
    if b.high <= 0:
        return min(b.low + 1, 0), 0
    return b.low + 1, b.high - 1


def _is_zero(node: _Node) -> bool:
    return node.constant and node.low == 0


def _never_zero(node: _Node) -> bool:
    return node.low > 0 or node.high < 0


class _Compiler:
    """Type-checks the syntax tree, works out whole-number ranges, and turns the tree into nested
    closures over torch operations that return (value, undefined)."""

    def __init__(self) -> None:
        self.uses_query = False
        self.uses_n = False
        self.divisions: list[str] = []

    def node(self, node: ast.AST) -> _Node:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            name = CONSTRUCT_NAMES.get(type(node))
            if name is None:
                name = f"'{_shown(node)}'" if isinstance(node, ast.expr) else type(node).__name__
            raise _refuse(node, f"{name} is not allowed")
        return method(node)

    @staticmethod
    def _whole(node: ast.AST, kind: str, fn: _Eval, low: float, high: float) -> _Node:
        """A node with its range; whole numbers that could leave 64 bits are refused here."""
        if kind != "int":
            finite = low == high and abs(low) != float("inf") and low == low
            return _Node(kind, fn) if not finite else _Node(kind, fn, low, high)
        if low < -INT64_MAX or high > INT64_MAX:
            reach = max(abs(low), abs(high))
            raise _refuse(node, f"'{_shown(node)}' can reach {reach:.1e} (positions and n go up to "
                                f"{MAX_POSITION:,}), beyond 64-bit whole numbers (±{INT64_MAX:.1e}); kvlab "
                                "refuses it rather than let it wrap around. Use smaller numbers, or a decimal "
                                "such as 1e15 to compute in floating point")
        return _Node(kind, fn, low, high)

    # -- leaves -----------------------------------------------------------------------------
    def _Constant(self, node: ast.Constant) -> _Node:
        value = node.value
        if isinstance(value, bool):
            kind = "bool"
        elif isinstance(value, int):
            if abs(value) > MAX_INT_LITERAL:
                raise _refuse(node, f"number {_shown(node)} is too large (limit {MAX_INT_LITERAL:.0e}); "
                                    "write it with a decimal point, e.g. 1e20, to use a larger number")
            kind = "int"
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise _refuse(node, f"number {_shown(node)} is not finite")
            kind = "float"
        elif isinstance(value, str):
            if len(value) > MAX_LITERAL_CHARS:
                raise _refuse(node, f"text literal is too long (limit {MAX_LITERAL_CHARS} characters)")
            return _Node("str", lambda q, k, n, intern: _Result(torch.tensor(intern(value), dtype=torch.int64),
                                                                None))
        else:
            raise _refuse(node, f"constant {_shown(node)} is not allowed")
        result = _Result(_tensor(value), None)
        if kind == "bool":
            return _Node(kind, lambda q, k, n, intern: result)
        return _Node(kind, lambda q, k, n, intern: result, value, value)

    def _Name(self, node: ast.Name) -> _Node:
        if node.id == "n":
            self.uses_n = True
            return _Node("int", lambda q, k, n, intern: _Result(n, None), *_ANY_POSITION)
        if node.id in ("true", "false"):
            result = _Result(torch.tensor(node.id == "true"), None)
            return _Node("bool", lambda q, k, n, intern: result)
        if node.id in ("q", "k"):
            raise _refuse(node, f"'{node.id}' needs an attribute: {node.id}.pos, {node.id}.token or {node.id}.value")
        raise _refuse(node, f"name '{_shown(node)}' is not allowed (use q.…, k.…, n, True or False; "
                            f"to compare with the word, put it in quotes: k.token == \"{_shown(node)}\")")

    def _Attribute(self, node: ast.Attribute) -> _Node:
        owner = node.value
        if not (isinstance(owner, ast.Name) and owner.id in ("q", "k") and node.attr in ATTRIBUTES):
            raise _refuse(node, f"attribute '{_shown(node)}' is not allowed "
                                "(use pos, token or value of q or k)")
        attr, kind = node.attr, ATTRIBUTES[node.attr]
        span = _ANY_POSITION if attr == "pos" else (-float("inf"), float("inf"))
        if owner.id == "q":
            self.uses_query = True
            return _Node(kind, lambda q, k, n, intern: _Result(getattr(q, attr), None), *span)
        return _Node(kind, lambda q, k, n, intern: _Result(getattr(k, attr), None), *span)

    # -- operators --------------------------------------------------------------------------
    def _BinOp(self, node: ast.BinOp) -> _Node:
        op = type(node.op)
        if op not in _ARITHMETIC:
            hint = OPERATOR_HINTS.get(op, "")
            raise _refuse(node, f"operator '{OPERATORS.get(op, op.__name__)}' is not allowed{hint}")
        a, b = self.node(node.left), self.node(node.right)
        symbol = OPERATORS[op]
        for side in (a, b):
            if side.kind not in _NUMBER:
                raise _refuse(node, f"'{symbol}' needs numbers on both sides, not {_KIND_WORDS[side.kind]}")
        kind = "int" if a.kind == b.kind == "int" else "float"
        low, high = _range_of(op, a, b) if (kind == "int" or a.constant and b.constant) else (-float("inf"),
                                                                                          float("inf"))
        left, right = a.fn, b.fn
        if op in (ast.FloorDiv, ast.Mod):
            if _is_zero(b):
                raise _refuse(node.right, f"division by zero: '{_shown(node.right)}' is always 0")
            rounded = torch.remainder if op is ast.Mod else functools.partial(torch.div, rounding_mode="floor")
            if _never_zero(b):
                def divide(q, k, n, intern):
                    x, y = left(q, k, n, intern), right(q, k, n, intern)
                    return _Result(rounded(x.value, y.value), _either(x.undefined, y.undefined))
            else:
                self.divisions.append(_shown(node))

                def divide(q, k, n, intern):
                    x, y = left(q, k, n, intern), right(q, k, n, intern)
                    zero = y.value == 0  # undefined here: computed with divisor 1, then masked
                    safe = torch.where(zero, torch.ones_like(y.value), y.value)
                    return _Result(rounded(x.value, safe), _either(_either(x.undefined, y.undefined), zero))

            return self._whole(node, kind, divide, low, high)
        torch_op = {ast.Add: torch.add, ast.Sub: torch.sub, ast.Mult: torch.mul}[op]

        def arithmetic(q, k, n, intern):
            x, y = left(q, k, n, intern), right(q, k, n, intern)
            return _Result(torch_op(x.value, y.value), _either(x.undefined, y.undefined))

        return self._whole(node, kind, arithmetic, low, high)

    def _UnaryOp(self, node: ast.UnaryOp) -> _Node:
        op = type(node.op)
        inner = self.node(node.operand)
        fn = inner.fn
        if op is ast.Not:
            if inner.kind != "bool":
                raise _refuse(node, f"'not' needs a true/false condition, not {_KIND_WORDS[inner.kind]}")

            def negate(q, k, n, intern):
                x = fn(q, k, n, intern)
                return _Result(torch.logical_not(x.value), x.undefined)

            return _Node("bool", negate)
        if op in (ast.USub, ast.UAdd):
            if inner.kind not in _NUMBER:
                raise _refuse(node, f"'{OPERATORS[op]}' needs a number, not {_KIND_WORDS[inner.kind]}")
            if op is ast.UAdd:
                return inner

            def minus(q, k, n, intern):
                x = fn(q, k, n, intern)
                return _Result(torch.neg(x.value), x.undefined)

            return self._whole(node, inner.kind, minus, -inner.high, -inner.low)
        raise _refuse(node, f"operator '{OPERATORS.get(op, op.__name__)}' is not allowed"
                            f"{OPERATOR_HINTS.get(op, '')}")

    def _BoolOp(self, node: ast.BoolOp) -> _Node:
        word = "and" if isinstance(node.op, ast.And) else "or"
        parts = []
        for value in node.values:
            part = self.node(value)
            if part.kind != "bool":
                raise _refuse(value, f"'{word}' needs true/false conditions, not {_KIND_WORDS[part.kind]}")
            parts.append(part.fn)
        return _Node("bool", _short_circuit(parts, word == "and"))

    def _Compare(self, node: ast.Compare) -> _Node:
        pairs = []
        left = self.node(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            op_type = type(op)
            symbol = OPERATORS.get(op_type, op_type.__name__)
            if op_type in (ast.In, ast.NotIn):
                pairs.append(self._membership(node, left, right_node, negate=op_type is ast.NotIn))
                left = None  # a chain continuing after `in` is refused below
                continue
            if left is None:
                raise _refuse(node, f"'{symbol}' cannot follow an 'in' test; use 'and'")
            if op_type not in (ast.Eq, ast.NotEq) + _ORDER:
                raise _refuse(node, f"comparison '{symbol}' is not allowed{OPERATOR_HINTS.get(op_type, '')}")
            right = self.node(right_node)
            numbers = left.kind in _NUMBER and right.kind in _NUMBER
            if not numbers and left.kind != right.kind:
                raise _refuse(node, f"cannot compare {_KIND_WORDS[left.kind]} with {_KIND_WORDS[right.kind]}")
            if op_type in _ORDER and not numbers:
                raise _refuse(node, f"'{symbol}' compares numbers; {_KIND_WORDS[left.kind]} only allows == and !=")
            torch_op = {ast.Eq: torch.eq, ast.NotEq: torch.ne, ast.Lt: torch.lt, ast.LtE: torch.le,
                        ast.Gt: torch.gt, ast.GtE: torch.ge}[op_type]

            def compare(q, k, n, intern, a=left.fn, b=right.fn, f=torch_op):
                x, y = a(q, k, n, intern), b(q, k, n, intern)
                return _Result(f(x.value, y.value), _either(x.undefined, y.undefined))

            pairs.append(compare)
            left = right
        return _Node("bool", _short_circuit(pairs, True))  # a < b < c is a < b and b < c

    def _membership(self, node: ast.Compare, left: _Node | None, right: ast.AST, negate: bool) -> _Eval:
        word = "not in" if negate else "in"
        if left is None:
            raise _refuse(node, f"'{word}' cannot follow another 'in' test; use 'and'")
        if not isinstance(right, (ast.Tuple, ast.List)):
            raise _refuse(right, f"'{word}' needs a list of literals, e.g. k.token in (\"a\", \"b\")")
        if not right.elts:
            raise _refuse(right, f"'{word}' needs at least one item")
        items = [self._literal(element) for element in right.elts]
        lkind = left.kind
        for element, item in zip(right.elts, items):
            same = (isinstance(item, str) and lkind == "str") or (
                not isinstance(item, (str, bool)) and lkind in _NUMBER) or (
                isinstance(item, bool) and lkind == "bool")
            if not same:
                raise _refuse(element, f"'{word}' compares {_KIND_WORDS[lkind]} with {_shown(element)}")
        text, fn = lkind == "str", left.fn

        def evaluate(q, k, n, intern):
            a = fn(q, k, n, intern)
            device = a.value.device  # the list lives where the tensors it is compared with live (a GPU)
            if text:
                pool = torch.tensor([intern(item) for item in items], dtype=torch.int64, device=device)
                value = a.value
            else:  # numbers and true/false compare as float64, exact for every allowed literal
                pool, value = torch.tensor(items, dtype=torch.float64, device=device), a.value.to(torch.float64)
            found = torch.isin(value, pool)
            return _Result(torch.logical_not(found) if negate else found, a.undefined)

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

    def _Call(self, node: ast.Call) -> _Node:
        if not (isinstance(node.func, ast.Name) and node.func.id == "abs"):
            raise _refuse(node, f"call '{_shown(node.func)}(…)' is not allowed (only abs(x) is)")
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise _refuse(node, "abs takes exactly one number, e.g. abs(q.pos - k.pos)")
        inner = self.node(node.args[0])
        if inner.kind not in _NUMBER:
            raise _refuse(node, f"abs needs a number, not {_KIND_WORDS[inner.kind]}")
        fn = inner.fn

        def absolute(q, k, n, intern):
            x = fn(q, k, n, intern)
            return _Result(torch.abs(x.value), x.undefined)

        low, high = inner.low, inner.high
        span = (low, high) if low >= 0 else (-high, -low) if high <= 0 else (0, max(-low, high))
        return self._whole(node, inner.kind, absolute, *span)

    def _Tuple(self, node: ast.AST) -> _Node:
        raise _refuse(node, "a list is only allowed after 'in' or 'not in'")

    _List = _Tuple


def _short_circuit(parts: list[_Eval], conjunction: bool) -> _Eval:
    """``and``/``or`` over parts, element by element, left to right as Python evaluates them: a
    part's undefined pairs count only where the parts before it have not decided the result."""
    if len(parts) == 1:
        return parts[0]

    def evaluate(q, k, n, intern):
        first = parts[0](q, k, n, intern)
        value, undefined = first.value, first.undefined
        for part in parts[1:]:
            nxt = part(q, k, n, intern)
            if nxt.undefined is not None:  # reached where everything so far is true (and) / false (or)
                reached = value if conjunction else torch.logical_not(value)
                undefined = _either(undefined, reached & nxt.undefined)
            value = torch.logical_and(value, nxt.value) if conjunction else torch.logical_or(value, nxt.value)
        return _Result(value, undefined)

    return evaluate
