"""Plain words for rules: the names of refused constructs and operators, and for a rule Python
cannot parse, what is wrong, where, and how to write it instead.

``k.pos ==`` gets "after `==` write a value, e.g. `k.pos == 1`" rather than Python's "invalid
syntax". Python's own message decides the broad case (an unclosed bracket, an unclosed quote, a
stray character); the rule's tokens decide the rest (what came last, which operator was meant).

What this module does not do: check or compile rules (viz.core.rules.language).
"""

from __future__ import annotations

import ast
import io
import tokenize

# Friendly names for the syntax the language refuses.
CONSTRUCT_NAMES = {
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
OPERATORS = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%",
    ast.Div: "/", ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<", ast.RShift: ">>",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.Invert: "~",
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not",
    ast.USub: "-", ast.UAdd: "+", ast.Not: "not",
}
OPERATOR_HINTS = {
    ast.Div: " (use // for whole-number division)",
    ast.Pow: " (write the product out, e.g. k.pos * k.pos)",
    ast.BitAnd: " (use 'and')",
    ast.BitOr: " (use 'or')",
    ast.Invert: " (use 'not')",
    ast.Is: " (use ==)",
    ast.IsNot: " (use !=)",
}

_CLOSERS = {"(": ")", "[": "]", "{": "}"}
_NEEDS_VALUE_AFTER = {
    "==": "k.pos == 1", "!=": "k.pos != 1", "<": "k.pos < 3", "<=": "k.pos <= 3", ">": "k.pos > 3",
    ">=": "k.pos >= 3", "+": "k.pos + 1 == q.pos", "-": "k.pos - 1 == 2", "*": "k.pos * 2 == 4",
    "//": "k.pos // 2 == 1", "%": "k.pos % 2 == 0", "and": "k.pos > 1 and k.pos < 4",
    "or": "k.pos == 1 or k.pos == 2", "not": "not k.pos == 1", "in": 'k.token in ("a", "b")',
    "(": "(k.pos == 1)", ",": 'k.token in ("a", "b")', "abs": "abs(q.pos - k.pos) < 2",
}
_WRONG_OPERATORS = {
    "=": "use `==` to compare (a single `=` assigns), e.g. `k.pos == 1`",
    "===": "use `==` to compare, e.g. `k.pos == 1`",
    "=>": "write `>=` for 'at least', e.g. `k.pos >= 2`",
    "=<": "write `<=` for 'at most', e.g. `k.pos <= 2`",
    "<>": "write `!=` for 'not equal', e.g. `k.pos != 2`",
    "!": "write `!=` for 'not equal' or `not` to negate, e.g. `not k.pos == 1`",
    "&&": "write `and`, e.g. `k.pos > 1 and k.pos < 4`",
    "&": "write `and`, e.g. `k.pos > 1 and k.pos < 4`",
    "||": "write `or`, e.g. `k.pos == 1 or k.pos == 2`",
    "|": "write `or`, e.g. `k.pos == 1 or k.pos == 2`",
}
_VALUE_TOKENS = (tokenize.NAME, tokenize.NUMBER, tokenize.STRING)
_KEYWORD_OPERATORS = ("and", "or", "not", "in", "is", "if", "else", "for", "lambda")


def _tokens(text: str) -> list[tokenize.TokenInfo]:
    """The tokens of ``text`` up to the first one the tokenizer cannot read."""
    out = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT):
                continue
            out.append(token)
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return out


def syntax_message(text: str, err: SyntaxError) -> tuple[str, int | None]:
    """A plain-words message with a hint, and its 1-based column, for a rule Python cannot parse."""
    msg = err.msg or ""
    col = err.offset if err.offset and err.offset > 0 else None
    known = _python_message(msg)
    if known:
        return known, col
    tokens = _tokens(text)
    if not tokens:
        return "rule is empty; write a condition such as `k.pos == 1`", None
    at = next((i for i, t in enumerate(tokens) if col is not None and t.start[1] >= col - 1), None)
    if at is None:  # the rule stops where more was expected
        return _stops_early(tokens)
    return _wrong_operator(tokens, at) or _at_token(tokens, at)


def _python_message(msg: str) -> str | None:
    """Python's own message for a bracket, a quote, a number or a character, in plain words."""
    if "was never closed" in msg:
        opener = msg[1] if len(msg) > 1 else "("
        return f"this `{opener}` is never closed; add a `{_CLOSERS.get(opener, ')')}`"
    if msg.startswith("unmatched") or "does not match" in msg:
        return "this closing bracket has no opening bracket before it; remove it or add one"
    if "unterminated string" in msg or "EOL while scanning" in msg:
        return ("this text in quotes is never closed; end it with the same quote mark, "
                "e.g. `k.token == \"so\"`")
    if "leading zeros" in msg:
        return "write whole numbers without leading zeros, e.g. `7` rather than `07`"
    if "decimal literal" in msg or "imaginary" in msg or "hexadecimal" in msg or "octal" in msg \
            or "binary" in msg or "underscore" in msg:
        return ("a number runs straight into letters here; write numbers with digits only, "
                "e.g. `12` or `1.5`, and put a space or an operator after them")
    if msg.startswith("invalid character") or msg.startswith("invalid non-printable"):
        start = msg.find("U+")
        code = msg[start:].split()[0].rstrip(")") if start >= 0 else "this character"
        return (f"the character {code} cannot be used in a rule; rules use plain letters, digits, "
                "spaces, brackets and the operators `== != < <= > >= + - * // %`")
    return None


def _stops_early(tokens: list[tokenize.TokenInfo]) -> tuple[str, int]:
    """The rule ends where more was expected: what to write after its last token."""
    last = tokens[-1].string
    if last == ".":
        return "after `.` write pos, token or value, e.g. `k.pos`", tokens[-1].start[1] + 1
    example = _NEEDS_VALUE_AFTER.get(last)
    if example:
        return f"after `{last}` write a value, e.g. `{example}`", tokens[-1].start[1] + 1
    return ("the rule stops too early; finish the condition, e.g. `k.pos % 2 == 0`",
            tokens[-1].end[1] + 1)


def _wrong_operator(tokens: list[tokenize.TokenInfo], at: int) -> tuple[str, int] | None:
    """An operator from another language (``&&``, ``=``, ``<>``…) spelled over touching tokens at ``at``."""
    for start in (at - 1, at):
        for stop in (at + 2, at + 1):
            if start < 0 or stop > len(tokens) or stop - start < 1:
                continue
            run = tokens[start:stop]
            if all(a.end == b.start for a, b in zip(run, run[1:])) and start <= at < stop:
                wrong = "".join(t.string for t in run)
                if wrong in _WRONG_OPERATORS:
                    return _WRONG_OPERATORS[wrong], run[0].start[1] + 1
    return None


def _at_token(tokens: list[tokenize.TokenInfo], at: int) -> tuple[str, int]:
    """What is wrong at token ``at``: a stray character, a missing operator or a missing value."""
    token = tokens[at]
    before = tokens[at - 1] if at > 0 else None
    column = token.start[1] + 1
    if token.type == tokenize.ERRORTOKEN or token.string in ("$", "?", "`", "'", '"'):
        return f"`{token.string}` cannot be used in a rule; a rule looks like `k.pos % 2 == 0`", column
    if before is not None and (before.type in _VALUE_TOKENS or before.string in (")", "]")) \
            and before.string not in _KEYWORD_OPERATORS \
            and (token.type in _VALUE_TOKENS or token.string == "(") and token.string not in _KEYWORD_OPERATORS:
        return (f"between `{_operand(tokens, at - 1)}` and `{token.string}` an operator is missing, "
                "e.g. `==`, `and` or `+`"), column
    if before is None and token.string in _NEEDS_VALUE_AFTER and token.string not in ("(", "not", "abs", "-"):
        return f"`{token.string}` needs a value before it, e.g. `{_NEEDS_VALUE_AFTER[token.string]}`", column
    if before is not None and before.string in _NEEDS_VALUE_AFTER:
        return f"after `{before.string}` write a value, e.g. `{_NEEDS_VALUE_AFTER[before.string]}`", column
    return (f"the rule cannot be read at `{token.string}`; a rule looks like `k.pos % 2 == 0` "
            "or `k.token in (\"a\", \"b\")`"), column


def _operand(tokens: list[tokenize.TokenInfo], i: int) -> str:
    """The dotted name ending at token i (``k.pos``), or that token alone."""
    start = i
    while start >= 2 and tokens[start - 1].string == "." and tokens[start - 2].type == tokenize.NAME:
        start -= 2
    return "".join(t.string for t in tokens[start: i + 1])
