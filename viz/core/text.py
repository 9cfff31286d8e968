"""Texts from visitors and errors: the characters no text field accepts, checked in one place for
every door user text comes through, and short one-line forms for messages.

A lone surrogate (``"\\ud800"``, half of a UTF-16 pair, which JSON can spell in plain ASCII) is not
a character: it cannot be encoded as UTF-8, so it breaks every later step that sends or stores the
text (the browser protocol, pyarrow tables, the terminal). Unicode's non-characters (U+FDD0–U+FDEF
and the last two code points of every plane, U+FFFE, U+FFFF, U+1FFFE, …) are reserved for internal
use and never belong in interchanged text. Control characters are refused too; tabs and line
breaks only where a field may hold several lines (the prompt, the description).

:func:`problem` says what is wrong in words that name the character and where it is;
:func:`shown` makes any text safe to quote in a message (clipped, such characters as ``\\uXXXX``);
:func:`first_line`, :func:`brief` and :func:`clip` shorten error messages; :func:`whole_number` checks a count;
:func:`joined` lists names as a sentence does; :func:`step_label` names a lesson's step control.
"""

from __future__ import annotations

import re

# the most characters a picker (a selectbox) shows whole in a page's narrow controls' column
# (viz.ui.common.SIDE_SHARE of the main column: about 200 px of 16 px type at 1440 × 900): its options'
# names stay within it (Serving's workload presets, Real model's heads)
PICKER_CHARS = 28

_NONCHARACTERS = "\ufdd0-\ufdef" + "".join(
    chr(plane << 16 | 0xFFFE) + chr(plane << 16 | 0xFFFF) for plane in range(17))
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
_UNUSABLE = re.compile(f"[\ud800-\udfff{_NONCHARACTERS}{_CONTROLS}\t\n\r]")
_UNUSABLE_MULTILINE = re.compile(f"[\ud800-\udfff{_NONCHARACTERS}{_CONTROLS}]")


def _kind(ch: str) -> str:
    code = ord(ch)
    if 0xD800 <= code <= 0xDFFF:
        return "a lone surrogate (half of a UTF-16 pair, not a character)"
    if 0xFDD0 <= code <= 0xFDEF or code & 0xFFFE == 0xFFFE:
        return "a Unicode non-character"
    if ch in "\t\n\r":
        return "a tab or line break (this field is one line)"
    return "a control character"


def first_unusable(text: str, *, multiline: bool = False) -> int | None:
    """The index of the first character no text field accepts, or None."""
    match = (_UNUSABLE_MULTILINE if multiline else _UNUSABLE).search(text)
    return None if match is None else match.start()


def problem(text: str, *, multiline: bool = False) -> str | None:
    """None if every character is usable; else a message naming the first bad one and its place."""
    index = first_unusable(text, multiline=multiline)
    if index is None:
        return None
    ch = text[index]
    return f"character {index + 1} is U+{ord(ch):04X}, {_kind(ch)}; remove it"


def first_line(err: BaseException) -> str:
    """An error's message in one line (torch's can run to many): its first line with text, or its
    type if it has none. A first line that only introduces what follows (ends with a colon, as
    transformers' "Class validation error for validator …:") gives way to the last line, the cause,
    without its exception's name."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].endswith(":") and len(lines) > 1:
        return re.sub(r"^\w*(?:Error|Exception|Warning): ", "", lines[-1])
    return lines[0]


def brief(err: BaseException, limit: int = 160) -> str:
    """An error's first line, clipped: what a message quotes from a library's error."""
    return clip(first_line(err), limit)


def clip(text: object, limit: int = 60) -> str:
    """At most ``limit`` characters, an ellipsis marking a cut."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def clip_words(text: str, limit: int) -> str:
    """At most ``limit`` characters, an ellipsis marking a cut made after the last whole word that fits,
    unless that keeps less than half (a long word is cut inside): a name shown in a narrow place."""
    if len(text) <= limit:
        return text
    kept = text[:limit - 1]
    words = kept.rsplit(" ", 1)[0].rstrip(" ,.:;·")
    return (words if len(words) >= limit // 2 else kept) + "…"


def shown(text: object, limit: int = 60) -> str:
    """Text to quote in a message: clipped to ``limit`` characters, unusable characters as \\uXXXX."""
    return _UNUSABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", clip(text, limit))


def kind(value: object) -> str:
    """What a JSON-like value is, in words: 'an object', 'text', 'true/false', …"""
    return {dict: "an object", list: "a list", str: "text", bool: "true/false",
            type(None): "null"}.get(type(value), type(value).__name__)


def whole_number(value: object, low: int, high: int) -> int:
    """``value`` as a whole number from ``low`` to ``high`` (3.0 counts as 3); ValueError says why."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"must be a whole number, got {kind(value)}")
    if not low <= value <= high:
        raise ValueError(f"must be between {low:,} and {high:,}, got {value:,}")
    return value


def joined(items: list[str]) -> str:
    """Items as a sentence lists them: "a", "a and b", "a, b and c"."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


STEP = "Step"  # the one name of every lesson's step control, on every page


def step_label(unit: str = "") -> str:
    """A step control's label: "Step", or "Step · <what one step is on this page>" (a scheduler
    iteration, a speculative round, a tile, a prediction), so a student learns one control."""
    return f"{STEP} · {unit}" if unit else STEP
