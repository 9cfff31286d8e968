"""Tier 1: fuzzing the doors user text comes through: the rule language, the scenario loader (see
also test_scenario.py) and share links. Thousands of generated inputs; nothing escapes but the
module's own error, nothing is executed, and no character that is not text gets in. (Tier 2:
test_hostile_links.py opens hostile links on every page; test_totality.py runs random accepted
rules through the engine.)"""

from __future__ import annotations

import ast
import builtins
import json
import os
import subprocess

from contextlib import contextmanager
from unittest.mock import patch

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hostile_text import link_for, record
from viz import load_preset
from viz.core.engine.model import Side
from viz.core.rules.language import RuleError, compile_rule
from viz.core.engine.scenario import Scenario, ScenarioError
from viz.core.engine.share import LINK_PAGE, View, decode_scenario, decode_view, encode_view, link_query

PIECES = ["k", "q", "n", ".", "pos", "token", "value", "__class__", "__globals__", "(", ")", "[", "]",
          "{", "}", "lambda", ":", "**", "*", "//", "/", "%", "-", "+", "9", "0", "1.5", "'a'", '"so"',
          "and", "or", "not", "==", "!=", "<", "<=", "in", "not in", ",", "abs", "import", "os", "x",
          "for", "if", "else", "True", "False", "true", "None", "@", "~", "is", ";", "=", ":=", "f'{k}'",
          "open", "eval", "exec", "__import__", "getattr", "\\", "#", "\n", "\x00", "…", " "]


def _forbidden(*args, **kwargs):
    raise AssertionError("user text reached code execution or the file system")


_real_compile = builtins.compile


def _syntax_tree_only(source, filename, mode, flags=0, *args, **kwargs):
    """ast.parse compiles to a syntax tree only; any other compile would make runnable code."""
    if not flags & ast.PyCF_ONLY_AST:
        _forbidden()
    return _real_compile(source, filename, mode, flags, *args, **kwargs)


@contextmanager
def nothing_runs():
    """Every way of running code or touching files fails loudly inside this block."""
    with patch.multiple(builtins, eval=_forbidden, exec=_forbidden, open=_forbidden, compile=_syntax_tree_only), \
            patch.object(os, "system", _forbidden), patch.object(subprocess, "Popen", _forbidden):
        yield


def _evaluate(rule) -> torch.Tensor:
    pos = torch.arange(1, 6)
    side_q = Side(pos[:, None], (pos % 3)[:, None], pos[:, None].double())
    side_k = Side(pos[None, :], (pos % 3)[None, :], pos[None, :].double())
    return rule.evaluate(side_q, side_k, torch.full((1, 5), 5), lambda text: len(text))


@settings(max_examples=2500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map(" ".join) | st.text(max_size=80))
def test_rule_language_fuzz(text):
    """Any text compiles to a rule that evaluates to booleans without raising, or raises RuleError
    when compiled; nothing runs."""
    compile_rule.cache_clear()
    with nothing_runs():
        try:
            rule = compile_rule(text)
        except RuleError as err:
            assert err.message  # refused, with a reason
            record("Rules: random text and code fragments", "refused")
            return
        out = _evaluate(rule)
    assert out.dtype == torch.bool
    record("Rules: random text and code fragments", "ran")


@settings(max_examples=1500, deadline=None)
@given(st.dictionaries(st.sampled_from(["s", "step", "mode", "present", "x"]),
                       st.text(max_size=60) | st.sampled_from(["1.", "1.eJw", "2.abc", "999999", "-1", "kv"]),
                       max_size=5))
def test_url_decoder_fuzz(params):
    """Any query parameters open a view (the seed where needed) with messages; never an exception."""
    view, problems = decode_view(params, load_preset("seed"))
    assert view.step >= 0 and view.mode in ("recompute", "reencode", "kv")
    assert all(isinstance(p, str) and p for p in problems)
    record("Share links: any query parameters (decoder)", "refused" if problems else "ran")


@settings(max_examples=800, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20)
       | st.binary(max_size=200))
def test_link_payload_fuzz(payload):
    """Well-formed links carrying arbitrary JSON or bytes load or raise ScenarioError."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        decode_scenario(link_for(raw))
    except ScenarioError as err:
        assert err.message
        record("Share links: any payload (decoder)", "refused")
        return
    record("Share links: any payload (decoder)", "ran")


def test_a_share_links_query_names_its_page_and_holds_the_view():
    """link_query adds the page to the view's parameters; the view reads back from it unchanged."""
    view = View(load_preset("content"), step=3, mode="recompute", head=1, position=2)
    query = link_query("decode", view)
    assert query[LINK_PAGE] == "decode" and {k: v for k, v in query.items() if k != LINK_PAGE} == encode_view(view)
    assert decode_view(query, load_preset("seed")) == (view, [])


def test_link_round_trip_and_zip_bomb():
    """A valid view survives encoding; a tiny link that inflates past the size limit is refused."""
    view = View(load_preset("content"), step=7, mode="reencode", presenter=True)
    decoded, problems = decode_view(encode_view(view), load_preset("seed"))
    assert decoded == view and not problems
    bomb = link_for(b" " * 5_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(ScenarioError, match="larger than"):
        decode_scenario(bomb)
    with pytest.raises(ScenarioError, match="cut off"):
        decode_scenario(link_for(load_preset("seed").to_json().encode())[:60])


def test_bytes_after_a_links_compressed_stream_are_refused():
    """A whole compressed scenario followed by anything more (another stream, a byte, padding) is
    refused as damaged, like any malformed link; the same stream alone reads back."""
    import zlib
    stream = zlib.compress(load_preset("seed").to_json().encode(), 9)
    assert decode_scenario(link_for_bytes(stream)) == load_preset("seed")
    for tail in (b"\x00", b"junk", stream, zlib.compress(b"{}")):
        with pytest.raises(ScenarioError, match="damaged"):
            decode_scenario(link_for_bytes(stream + tail))


def link_for_bytes(raw: bytes) -> str:
    """A link's scenario parameter for these compressed bytes, as encode_scenario writes it."""
    import base64
    from viz.core.engine.share import LINK_VERSION
    return f"{LINK_VERSION}.{base64.urlsafe_b64encode(raw).decode('ascii').rstrip('=')}"


UNUSABLE = [chr(c) for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xFFFE, 0xFFFF, 0xFDD0, 0xFDEF, 0x1FFFE, 0x10FFFF,
                             0x00, 0x07, 0x1B, 0x7F, 0x85, 0x9F)]
TEXT_FIELDS = ["title", "description", "prompt", "tokens.1", "heads.0.name", "heads.2.rule", "vocab.1.token"]


def _with(data: dict, path: str, insert: str, at: int) -> dict:
    """A copy of the scenario dict with ``insert`` put into the text at ``path``, ``at`` characters in."""
    data = json.loads(json.dumps(data))
    *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
    holder = data
    for part in parents:
        holder = holder[part]
    holder[last] = holder[last][:at] + insert + holder[last][at:]
    return data


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(TEXT_FIELDS), st.sampled_from(UNUSABLE), st.integers(0, 12), st.booleans())
def test_no_text_field_takes_a_character_that_is_not_text(field, char, at, through_link):
    """A lone surrogate, a non-character or a control character in any text field, sent as JSON
    (plain ASCII escapes) or inside a share link, is refused with a message naming that field."""
    data = load_preset("seed").to_dict()
    if field.startswith("tokens"):
        data["tokens"] = ["Today", "weather", "is", "so"]
    data = _with(data, field, char, at)
    text = json.dumps(data)  # ensure_ascii: "\ud800" travels as plain ASCII, as in the issue
    with pytest.raises(ScenarioError) as err:
        if through_link:
            decode_scenario(link_for(text))
        else:
            Scenario.from_json(text)
    named = {"tokens.1": "tokens[1]", "heads.0.name": "heads[0].name", "heads.2.rule": "heads[2].rule",
             "vocab.1.token": "vocab[1].token"}.get(field, field)
    assert err.value.path == named and f"U+{ord(char):04X}" in err.value.message
    record("Characters that are not text, in every field (JSON, links)", "refused")
    err.value.message.encode("utf-8")  # the message itself can always be sent to a browser


def test_an_error_is_quoted_in_one_line_that_says_why():
    """A library's error shortened for a message: its first line, or under a heading that ends with
    a colon (transformers' validators) the cause on the last line without its exception's name."""
    from viz.core.text import brief, first_line, joined

    assert first_line(ValueError("bad value\n  more detail")) == "bad value"
    assert first_line(ValueError("Class validation error for validator 'v':\n    ValueError: The size is odd.")) \
        == "The size is odd."
    assert first_line(ValueError("")) == "ValueError"
    assert brief(ValueError("x" * 300)).endswith("...") and len(brief(ValueError("x" * 300))) == 160
    assert [joined(items) for items in ([], ["a"], ["a", "b"], ["a", "b", "c"])] == ["", "a", "a and b", "a, b and c"]
