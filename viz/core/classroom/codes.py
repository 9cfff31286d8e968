"""Codes a class hands out: join codes, short-link codes, student ids and the teacher's secret.

Join and short-link codes use Crockford's base32 (no I, L, O or U), so a code read off a projector
and typed on a phone survives the usual slips: case, spaces and dashes are ignored and O, I and L
read as 0, 1 and 1. Every code comes from ``secrets`` (the operating system's random source).
The teacher's secret is never stored: the store keeps its SHA-256 only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford's base32: 5 bits a character
JOIN_CHARS = 8  # 40 bits: shown as ABCD-EFGH
LINK_CHARS = 10  # 50 bits: /?v=ABCDEFGHJK
_TYPOS = str.maketrans({"O": "0", "I": "1", "L": "1"})
_SEPARATORS = re.compile(r"[\s\-_.]+")


def new_code(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


def normalise(text: str, length: int) -> str | None:
    """The code someone typed, in canonical form; None when it cannot be one of ours."""
    if not isinstance(text, str) or len(text) > 4 * length:
        return None
    code = _SEPARATORS.sub("", text).upper().translate(_TYPOS)
    if len(code) != length or any(c not in ALPHABET for c in code):
        return None
    return code


def shown(code: str) -> str:
    """A join code as the projector writes it: two groups of four (ABCD-EFGH)."""
    return f"{code[:4]}-{code[4:]}" if len(code) == JOIN_CHARS else code


def new_secret() -> str:
    """The teacher's secret: 144 random bits, URL-safe."""
    return secrets.token_urlsafe(18)


def new_student() -> str:
    """A student's id within one class: 72 random bits, URL-safe."""
    return secrets.token_urlsafe(9)


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "replace")).hexdigest()


def matches(secret: str, stored_digest: str) -> bool:
    """Whether ``secret`` is the one whose digest was stored (compared in constant time)."""
    return isinstance(secret, str) and hmac.compare_digest(digest(secret), stored_digest)


_STUDENT = re.compile(r"[A-Za-z0-9_-]{12}")


def valid_student(text: str) -> bool:
    return isinstance(text, str) and bool(_STUDENT.fullmatch(text))
