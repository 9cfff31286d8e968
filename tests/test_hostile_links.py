"""Tier 2 (AppTest): hostile share links opened on every page.

Each link opens a fresh session (as a student clicking it would), then visits every page.
The links are valid-looking scenarios full of hostile strings and random accepted rules, sizes at
the edges the limits allow (kept small enough for the suite), damaged payloads, unknown fields,
odd query parameters, huge or negative steps and unknown modes. On every page: no exception
element, the guard never had to step in (so no failure is hidden behind its message), the state is
the one the link asks for (or the seed, with a notice), the address bar holds a link to it, and
no visitor text is rendered as Markup.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from hostile_text import HOSTILE, SCENARIO, element_protos, link_for, markdown_strings, problems_in, record
from rule_grammar import ACCEPTED_RULES
from viz import MODES, load_preset
from viz.core.engine.scenario import MAX_DECODE_STEPS, MAX_HEADS, MAX_TOKEN_CHARS, MAX_VOCAB, Scenario
from viz.core.engine.share import decode_view, encode_scenario
from viz.ui import guard, polls, state

from apptest_helpers import ALL_PAGES, errors, scenario

PAGES = ALL_PAGES
GENERATED_LINKS = 30

# Text a visitor might paste: markup, scripts, right-to-left marks, zero-width characters,
# combining marks, emoji sequences, wide characters, lookalikes.
ODD_TEXT = HOSTILE + ("<script>alert(1)</script>", "\u202eevil\u202c", "a\u200bb", "e\u0301\u0301", "👩‍👩‍👧",
                      "全角", "ｗｗｗ．ｅｘａｍｐｌｅ．ｏｒｇ", "%s%n{0}", "${7*7}", "{{7*7}}", "'; DROP TABLE x;--",
                      "\\", "`", "***", "# h", "> q", "- [ ] x", "| a | b |", "&amp;", "&#60;img&#62;", "\u00a0")


def _word(i: int) -> st.SearchStrategy[str]:
    """A token, name or word: an odd text, clipped to the limit, numbered to stay unique."""
    return st.sampled_from(ODD_TEXT).map(lambda text: f"{text[: MAX_TOKEN_CHARS - 4]} {i}")


@st.composite
def hostile_scenarios(draw) -> Scenario:
    """A valid scenario whose every string is odd text and whose rules are random accepted ones."""
    n = draw(st.integers(1, 10))
    heads = draw(st.integers(1, 4))
    words = draw(st.integers(1, 5))
    return Scenario.from_dict({
        "title": draw(st.sampled_from(ODD_TEXT)), "description": " ".join(draw(st.lists(st.sampled_from(ODD_TEXT)))),
        "prompt": " ".join(draw(st.lists(st.sampled_from(ODD_TEXT), max_size=6))),
        "tokens": [draw(_word(i)) for i in range(n)],
        "values": draw(st.lists(st.integers(-1000, 1000), min_size=n, max_size=n)),
        "d_k": draw(st.sampled_from([1, 3, 64, 1024])),
        "heads": [{"name": draw(_word(i)), "rule": draw(ACCEPTED_RULES)} for i in range(heads)],
        "vocab": [{"token": draw(_word(i)), "value": draw(st.integers(-50, 50)),
                   "weights": draw(st.lists(st.integers(-9, 9), min_size=heads, max_size=heads))}
                  for i in range(words)],
        "sampling": {"strategy": draw(st.sampled_from(["greedy", "sample"])), "seed": draw(st.integers(0, 2**63 - 1)),
                     "temperature": draw(st.sampled_from([0, 0.01, 1, 100])), "top_p": draw(st.sampled_from([0.01, 1]))},
    })


STEPS = st.sampled_from(["0", "1", "7", "40", str(MAX_DECODE_STEPS + 1), "-1", "1e3", "٣", " 3", "0x10", "",
                         "99999999999999999999", "3.5"])
ODD_MODES = st.sampled_from([*MODES, "KV", "fast", "", "<b>kv</b>", "kv\u200b"])


def _damaged(text: str) -> st.SearchStrategy[str]:
    """A share-link payload broken in one of the ways copying, editing or an attacker breaks it."""
    return st.sampled_from([
        text[: len(text) // 2], text + "!!", "2" + text[1:], "1." + text[2:][::-1], "1.", ".", "1", "999999.abc",
        link_for(b"\xff\xfe not utf-8"), link_for("not json"), link_for("[" * 5000 + "]" * 5000),
        link_for('{"prompt": "a", "tokens": ["\\ud800"]}'), link_for('{"prompt": "\\ufffe"}'),
        link_for('{"prompt": "x", "d_k": 1e999, "heads": [{"rule": "True"}], "vocab": [{"token": "a", "weights": [1]}]}'),
        link_for('{"prompt": "x", "values": [NaN], "heads": [{"rule": "True"}], "vocab": [{"token": "a", "weights": [1]}]}'),
        link_for(b" " * 300_000),
    ])


@st.composite
def hostile_links(draw) -> dict[str, str]:
    """Query parameters of a link: a scenario (hostile, damaged or with unknown fields) and odd extras."""
    s = draw(hostile_scenarios())
    kind = draw(st.sampled_from(["valid", "valid", "damaged", "unknown fields"]))
    if kind == "valid":
        payload = encode_scenario(s)
    elif kind == "damaged":
        payload = draw(_damaged(encode_scenario(s)))
    else:
        data = s.to_dict()
        data[draw(st.sampled_from(ODD_TEXT))] = draw(st.sampled_from(ODD_TEXT))
        payload = link_for(json.dumps(data, ensure_ascii=False))
    params = {"s": payload, "step": draw(STEPS), "mode": draw(ODD_MODES)}
    params.update(draw(st.dictionaries(st.sampled_from(["present", "x", "<b>", "s2", "page"]),
                                       st.sampled_from(["1", "true", "", "<img src=x>", "\u202e"]), max_size=2)))
    return params


def _extreme() -> Scenario:
    """Every count at its limit but the prompt (kept short for the suite): 16 heads, 64 words, d_k 1024."""
    heads = [{"name": f"{ODD_TEXT[i % len(ODD_TEXT)][:30]} {i}", "rule": rule}
             for i, rule in enumerate(["k.pos % (q.pos - 2) == 0", "k.pos == n", "True", "k.value // (k.value - 20) > 0"]
                                      * (MAX_HEADS // 4))]
    vocab = [{"token": f"w{i}" + "x" * (MAX_TOKEN_CHARS - 4), "value": i - 32, "weights": [(i * h) % 7 - 3 for h in range(MAX_HEADS)]}
             for i in range(MAX_VOCAB)]
    return Scenario.from_dict({"tokens": [f"t{i}" for i in range(24)], "values": list(range(24)), "d_k": 1024,
                               "heads": heads, "vocab": vocab, "sampling": {"strategy": "sample", "seed": 7}})


FIXED_LINKS = {
    "hostile strings at step 3": {"s": encode_scenario(SCENARIO), "step": "3"},
    "extreme sizes, recompute": {"s": encode_scenario(_extreme()), "step": "12", "mode": "recompute"},
    "the longest decode on a small prompt": {"s": encode_scenario(load_preset("seed")), "step": str(MAX_DECODE_STEPS),
                                             "mode": "reencode"},
    "step past the limit": {"step": str(MAX_DECODE_STEPS + 1)},
    "negative step": {"step": "-5"},
    "unknown mode": {"mode": "turbo"},
    "zip bomb": {"s": link_for(b" " * 5_000_000)},
    "lone surrogate token": {"s": link_for('{"tokens": ["\\ud800"], "heads": [{"rule": "True"}], '
                                           '"vocab": [{"token": "a", "weights": [1]}]}')},
    "unknown field named like a link": {"s": link_for(json.dumps({**SCENARIO.to_dict(), "[x](https://example.org)": 1}))},
    "rule that used to crash Prefill": {"s": encode_scenario(load_preset("seed").with_heads(
        [load_preset("seed").heads[0].__class__("x", "k.pos // (q.pos - 3) == 0"), *load_preset("seed").heads[1:]],
        [0, 1, 2, 3]))},
    "rule that used to crash Decode's first step": {"s": encode_scenario(load_preset("seed").with_heads(
        [load_preset("seed").heads[0].__class__("x", "k.pos // (k.pos - 5) == 0"), *load_preset("seed").heads[1:]],
        [0, 1, 2, 3])), "step": "4"},
    "rule that wraps at 64 bits": {"s": link_for(json.dumps({**load_preset("seed").to_dict(), "heads": [
        {"name": "x", "rule": "k.pos * 1000000000000000 * 1000000000000000 > 0"}], "vocab": [
        {"token": "a", "weights": [1]}]}))},
    "damaged payload": {"s": "1.eJzLSM3JyVcozy_KSQEAGgQEXQ"[:-6] + "%%%"},
    "another kvlab's link": {"s": "7.abc", "step": "1"},
}


def visit_every_page(params: dict[str, str]) -> None:
    """Open the link in a fresh session, then every page; check what must hold on each."""
    expected, problems = decode_view(params, load_preset("seed"))
    at = AppTest.from_file("../app.py", default_timeout=180)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    category = "Share links opened in a fresh session, on every page (AppTest)"
    for page in PAGES:
        if page != PAGES[0]:
            at.switch_page(page).run()
        if at.exception or polls.FAILED in errors(at) or at.session_state[state.RUN_FAILED]:
            record(category, "traceback")
        if scenario(at) != expected.scenario:
            record(category, "state lost")
        assert not at.exception, (page, params, [e.value for e in at.exception])
        assert polls.FAILED not in errors(at), (page, params)
        assert guard.RESTORED not in [w.value for w in at.warning], (page, params)
        assert not at.session_state[state.RUN_FAILED], (page, params)
        assert scenario(at) == expected.scenario and scenario(at).validated() == expected.scenario
        assert at.session_state[state.MODE] == expected.mode and 0 <= at.session_state[state.STEP] <= MAX_DECODE_STEPS
        link = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
        if page == "pages/home.py":  # the home page shows no view, so its address carries none
            assert not link, link
        else:  # the address bar is a link to the view
            restored, link_problems = decode_view(link, load_preset("seed"))
            assert not link_problems and restored.scenario == expected.scenario, page
        bad = [(where, p) for proto in element_protos(at) for where, text in markdown_strings(proto)
               for p in problems_in(text)]
        assert not bad, (page, bad)
    if problems:  # a refused part of the link is said, in the sidebar
        assert len([w for w in at.warning if w.value.startswith("Share link")]) == len(problems)
    record(category, "refused" if problems else "ran")


@pytest.mark.parametrize("name", FIXED_LINKS)
def test_known_hostile_links_open_on_every_page(name):
    """Each of these links, from the issue and its neighbours, opens cleanly on every page."""
    visit_every_page(FIXED_LINKS[name])


@settings(max_examples=GENERATED_LINKS, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.filter_too_much, HealthCheck.data_too_large])
@given(hostile_links())
def test_generated_hostile_links_open_on_every_page(params):
    """Generated hostile links open cleanly on every page."""
    visit_every_page(params)
