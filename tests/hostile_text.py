"""A scenario whose every string is a Markdown link, an image, HTML, LaTeX or a Streamlit directive,
and the checks that none of it is rendered. Shared by the AppTest tier (test_hostile_render.py) and
the browser tier (browser/test_hostile_text.py).
"""

from __future__ import annotations

import json
import re

from viz import Scenario

LINK = "[win](https://example.org)"
IMAGE = "![i](https://example.org/x.png)"
HTML_IMAGE = "<img src=x onerror=alert(1)>"
HTML_LINK = "<a href=https://example.org>a</a>"
LATEX = "$x^2$"
DISPLAY_LATEX = "$$\\int y$$"
DIRECTIVE = ":red[x]"
ICON = ":material/home:"
EMOJI = ":smile:"
AUTOLINK = "www.example.org"
URL = "https://example.org/u"
HOSTILE = (LINK, IMAGE, HTML_IMAGE, HTML_LINK, LATEX, DISPLAY_LATEX, DIRECTIVE, ICON, EMOJI, AUTOLINK, URL)

# Pieces of the hostile strings that only ever appear when visitor text is rendered unescaped:
# none of kvlab's own texts contains them (kvlab's one link of its own, to the source article, is not
# to example.org).
MARKERS = ("](https://example", "<img", "<a ", "$x^", "$$\\int", ":red[", ":material/home", ":smile:", "www.example",
           "https://example", "</a>")

SCENARIO = Scenario.from_dict({
    "title": f"{LINK} {HTML_IMAGE} {LATEX}",
    "description": f"{IMAGE} {DIRECTIVE} {AUTOLINK}\n# heading\n    code {EMOJI}",
    "prompt": f"{HTML_IMAGE} {LINK} {LATEX}",
    "tokens": list(HOSTILE),
    "values": [10, 20, 1, 5, 3, 7, 2, 9, 4, 6, 8],
    "d_k": 16,
    "heads": [
        {"name": LINK, "rule": f"k.token == '{LINK}' or k.pos == 1"},
        {"name": HTML_IMAGE, "rule": "k.pos == n"},  # reads n: the stale-cache explanations quote it
        {"name": f"{LATEX} {DIRECTIVE} {EMOJI}", "rule": f"k.token in ('{LATEX}', '{DIRECTIVE}', '{EMOJI}')"},
        {"name": f"{ICON} {AUTOLINK}", "rule": "k.pos // (q.pos - 3) == 0 or k.pos % 2 == 0"},
    ],
    "vocab": [
        {"token": LINK, "value": 7, "weights": [0.8, 0.5, 0.1, 0.2]},
        {"token": IMAGE, "value": 6, "weights": [0.6, 0.4, 0.2, 0.3]},
        {"token": HTML_LINK, "value": 2, "weights": [0.1, 0.2, 0.5, 0.1]},
        {"token": DISPLAY_LATEX, "value": 3, "weights": [0.3, 0.9, 0.1, 0.4]},
        {"token": f"{DIRECTIVE}{EMOJI}", "value": 1, "weights": [0.2, 0.1, 0.9, 0.6]},
    ],
    "sampling": {"strategy": "sample", "temperature": 2.0, "seed": 3},
})

# Streamlit's front end loads KaTeX for a Markdown text when these match it (StreamlitMarkdown:
# code spans and backslash escapes are blanked first) and remark-emoji for this one.
_BLANKED = re.compile(r"(?:^|(?<=\n)) {0,3}(`{3,}|~{3,})[\s\S]*?(?:\n[ \t]*\1|$)|(?<!`)(`+)[^`\n]+\2(?!`)"
                      r"|\\[\\$`]")
_DISPLAY_MATH = re.compile(r"(?<!\$)\$\$+(?!\$)[\s\S]*?\$\$")
_INLINE_MATH = re.compile(r"(?<!\$)\$(?![\s$])[^$\n]*?[^\s$]\$(?!\d)")
_EMOJI_SHORTCODE = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")


_CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?!`)[^\n]*?(?<!`)\1(?!`)")
_UNESCAPED = [(marker, re.compile(r"(?:^|[^\\])(?:\\\\)*" + re.escape(marker))) for marker in MARKERS]


def problems_in(text: str) -> list[str]:
    """What in a Markdown-rendered string would turn visitor text into something else: a marker
    not escaped (after an even number of backslashes) outside a code span, text KaTeX or remark-emoji
    would pick up."""
    literal = _CODE_SPAN.sub("_", text)  # a code span shows its characters as they are
    found = [f"unescaped {marker!r}" for marker, pattern in _UNESCAPED if pattern.search(literal)]
    blanked = _BLANKED.sub("_", text)
    if "$" in text and (_DISPLAY_MATH.search(blanked) or _INLINE_MATH.search(blanked)):
        found.append("KaTeX would render")
    if _EMOJI_SHORTCODE.search(text):
        found.append("an emoji shortcode would render")
    return found


# Fields of Streamlit's element protos that the front end renders as Markdown.
MARKDOWN_FIELDS = {"body", "label", "help", "delta", "placeholder_text"}
OPTION_PROTOS = {"Radio", "Slider", "ButtonGroup"}  # their options render Markdown too
PLAIN_PROTOS = {"Code", "Html", "PlotlyChart", "Arrow", "Dataframe", "Json", "Text", "TextInput", "TextArea"}


def markdown_strings(message, proto_name: str | None = None, path: str = "") -> list[tuple[str, str]]:
    """(where, text) for every string in an element proto that Streamlit renders as Markdown."""
    proto_name = proto_name or type(message).__name__
    out = []
    for field, value in message.ListFields():
        where = f"{proto_name}.{path}{field.name}"
        values = list(value) if field.is_repeated else [value]
        for item in values:
            if hasattr(item, "ListFields"):
                out += markdown_strings(item, proto_name, f"{path}{field.name}.")
            elif isinstance(item, str):
                options = field.name in ("options", "content") and proto_name in OPTION_PROTOS
                if proto_name not in PLAIN_PROTOS and (field.name in MARKDOWN_FIELDS or options):
                    out.append((where, item))
                elif field.name == "columns" and item.startswith("{"):  # dataframe column help
                    for name, config in json.loads(item).items():
                        if isinstance(config, dict) and config.get("help"):
                            out.append((f"{where}[{name}].help", config["help"]))
    return out


def element_protos(at):
    """Every element and block proto on the page AppTest ran, with its proto type name."""
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None:
            yield proto
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            stack.extend(children.values())


def link_for(payload: str | bytes) -> str:
    """A share link's ``s`` parameter carrying any payload, valid or not, as kvlab packs scenarios."""
    import base64
    import zlib

    raw = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
    return "1." + base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


# -- the counts in the README's "Hostile input" table ---------------------------------------------
OUTCOMES = ("refused", "ran", "traceback", "state lost")
TALLY: dict[str, dict[str, int]] = {}


def record(category: str, outcome: str) -> None:
    """Count one hostile case (tests/hostile_tally.py prints the table): ``refused`` with a message,
    ``ran`` (accepted and run), or what must never happen: a ``traceback``, ``state lost``."""
    assert outcome in OUTCOMES, outcome
    counts = TALLY.setdefault(category, dict.fromkeys(OUTCOMES, 0))
    counts[outcome] += 1
