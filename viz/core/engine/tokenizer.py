"""A word tokenizer: the prompt's words in order, punctuation dropped, possessive 's removed.

"Today's weather is so …" gives ["Today", "weather", "is", "so"], the seed article's tokens.
Words keep inner apostrophes and hyphens ("don't", "well-known"); a run of symbols such as an
emoji or "<" is one token of its own, so nothing a person types silently disappears except
punctuation and spaces. Real models use subword tokenizers; this one keeps the toy readable.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]+")
_POSSESSIVE = re.compile(r"['’][sS]$")


def _is_symbol_run(text: str) -> bool:
    """True if a run of non-word characters holds a symbol (emoji, math sign, currency)."""
    return any(unicodedata.category(ch)[0] == "S" for ch in text)


def _keeps(ch: str) -> bool:
    """Inside a symbol run keep symbols, combining marks and the emoji joiner; drop punctuation."""
    return unicodedata.category(ch)[0] in "SM" or ch == "\u200d"


def tokenize(prompt: str) -> list[str]:
    """Split a prompt into word tokens; see the module docstring for the rules."""
    tokens = []
    for match in _WORD.finditer(prompt):
        piece = match.group()
        if piece[0].isalnum() or piece[0] == "_":
            tokens.append(_POSSESSIVE.sub("", piece) or piece)
        elif _is_symbol_run(piece):
            tokens.append("".join(ch for ch in piece if _keeps(ch)))
    return [token for token in tokens if token]
