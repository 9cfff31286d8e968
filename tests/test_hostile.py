"""Tier 1: fuzzing the three doors user text comes through: the rule language, the scenario loader
(see test_scenario.py) and share links. Thousands of generated inputs; nothing escapes but the
module's own error, and nothing is executed."""

from __future__ import annotations

import ast
import base64
import builtins
import json
import os
import subprocess
import zlib

from contextlib import contextmanager
from unittest.mock import patch

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from viz import load_preset
from viz.core.engine import Side
from viz.core.rules import RuleError, compile_rule
from viz.core.scenario import ScenarioError
from viz.core.share import decode_scenario, decode_view, encode_view, View

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
            return
        out = _evaluate(rule)
    assert out.dtype == torch.bool


@settings(max_examples=1500, deadline=None)
@given(st.dictionaries(st.sampled_from(["s", "step", "mode", "present", "x"]),
                       st.text(max_size=60) | st.sampled_from(["1.", "1.eJw", "2.abc", "999999", "-1", "kv"]),
                       max_size=5))
def test_url_decoder_fuzz(params):
    """Any query parameters open a view (the seed where needed) with messages; never an exception."""
    view, problems = decode_view(params, load_preset("seed"))
    assert view.step >= 0 and view.mode in ("recompute", "reencode", "kv")
    assert all(isinstance(p, str) and p for p in problems)


def _link(payload: bytes) -> str:
    return "1." + base64.urlsafe_b64encode(zlib.compress(payload)).decode().rstrip("=")


@settings(max_examples=800, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                                 max_size=4), max_leaves=20)
       | st.binary(max_size=200))
def test_link_payload_fuzz(payload):
    """Well-formed links carrying arbitrary JSON or bytes load or raise ScenarioError."""
    raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    try:
        decode_scenario(_link(raw))
    except ScenarioError:
        pass


def test_link_round_trip_and_zip_bomb():
    """A valid view survives encoding; a tiny link that inflates past the size limit is refused."""
    view = View(load_preset("content"), step=7, mode="reencode", presenter=True)
    decoded, problems = decode_view(encode_view(view), load_preset("seed"))
    assert decoded == view and not problems
    bomb = _link(b" " * 5_000_000)
    assert len(bomb) < 20_000
    with pytest.raises(ScenarioError, match="larger than"):
        decode_scenario(bomb)
    with pytest.raises(ScenarioError, match="cut off"):
        decode_scenario(_link(load_preset("seed").to_json().encode())[:60])
