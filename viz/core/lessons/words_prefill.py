"""The Prefill page's words: its fixed prose, and the sentences built from a prefill's numbers.

Small functions over typed values (no torch work). Every sentence is Markdown; the parts a visitor
may have typed (tokens, head names, rules, a scenario's title) go through ``esc``, the page's
escaping function, so they show exactly as typed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..engine.explain import RowExplanation, fmt
from ..engine.scenario import Sampling
from ..text import step_label

Escape = Callable[[str], str]

TITLE = "Prefill"
CAPTION = ("The whole prompt goes through attention in one batched pass: every query row at "
           "once, with the causal mask hiding the future.")
ABOUT = "The scenario: its prompt, its heads and their sizes"  # the fold under the sentence
CUSTOM = "A custom scenario: edited in the sidebar, opened from a file or a link."
WHOLE_HELP = "Show every row and key, not only those around the position"
STEP_LABEL = step_label("query position")
STEP_HELP = ("One step moves the query in focus to the next position of the prompt: its row of the board "
             "lights up, and the keys it may see are the ones at or before it.")
QK_BY_RULE = ("This rule compares the query with the key (it reads q), so there is no single K row per "
              "key: each score is +√d_k where the rule holds for that (query, key) pair and −√d_k "
              "where it does not.")
NO_MATCH_HEADING = "#### When nothing matches, softmax still attends to something"
NO_MATCH_SHOWN = 8  # rows listed; the rest are counted


def opened(title: str, description: str, esc: Escape) -> str:
    """A preset scenario's title and what it shows."""
    return f"**{esc(title)}** · {esc(description)}"


def shape(tokens: int, d_k: int) -> str:
    """The prompt's length and the scores' size."""
    return f"{tokens} tokens · d_k = {d_k} · scores are ±√d_k = ±{fmt(d_k ** 0.5)}"


def position_labels(tokens: Sequence[str]) -> dict[int, str]:
    """The stepper's name for each position (1-based): '2 · weather' (plain text, escaped by the stepper)."""
    return {i: f"{i} · {token}" for i, token in enumerate(tokens, start=1)}


def sees(tokens: Sequence[str], position: int, esc: Escape) -> str:
    """'**so** (position 4) sees Today's, weather, is, so'."""
    return f"**{esc(tokens[position - 1])}** (position {position}) sees {esc(', '.join(tokens[:position]))}"


def narration(tokens: Sequence[str], position: int, row: RowExplanation, esc: Escape) -> str:
    """What the position sees and what the shown head makes of it."""
    return f"{sees(tokens, position, esc)}. " + esc(row.text)


def every_head(tokens: Sequence[str], position: int, rows: Sequence[RowExplanation], esc: Escape) -> str:
    """What the position sees, and each head's row as a list (one element for both)."""
    return f"{sees(tokens, position, esc)}:\n\n" + "\n".join(f"- {esc(row.text)}" for row in rows)


def head_rule(name: str, rule: str, cacheable: bool, esc: Escape) -> str:
    """A head's name and rule, and whether its keys can be cached."""
    return (f"Head **{esc(name)}**, rule {esc(rule)} · "
            + ("keys can be cached" if cacheable else "**reads n: its keys change as the sequence "
                                                      "grows, so they cannot be cached**"))


def last_context(token: str, context: Sequence[float], esc: Escape) -> str:
    """The last position's context, which W_vocab turns into logits."""
    return (f"The context of the last position, {esc(token)}, is "
            f"[{', '.join(fmt(float(c)) for c in context)}]; multiplied by W_vocab it gives one "
            "logit per word.")


def sampled(s: Sampling, token: str, p: float, esc: Escape) -> str:
    """The sampling settings, the word they chose and its probability."""
    settings = (f"{s.strategy}, temperature {fmt(s.temperature)}, "
                f"top-k {s.top_k or 'off'}, top-p {fmt(s.top_p) if s.top_p < 1 else 'off'}"
                + (f", seed {s.seed}" if s.strategy == "sample" else ""))
    return (f"Sampling: {settings} → **{esc(token)}** "
            f"(p = {p:.3f}). The Decode page appends it and goes on.")


def no_match(cases: Sequence[RowExplanation], esc: Escape) -> tuple[tuple[str, ...], str, str]:
    """Rows where nothing matches, with this scenario's numbers: a line for each of the first
    :data:`NO_MATCH_SHOWN`, how many more there are ("" when none), and why softmax still attends."""
    lines = []
    for row in cases[:NO_MATCH_SHOWN]:
        share = ("its only visible key gets all the weight" if row.visible == 1
                 else f"the {row.visible} visible keys get {fmt(row.weight_each)} each")
        lines.append(f"- head **{esc(row.head)}** at **{esc(row.query)}**: no visible key "
                     f"matches, every score is −√d_k, so {share} → context {fmt(row.context)}")
    more = f"… and {len(cases) - NO_MATCH_SHOWN} more rows like these." if len(cases) > NO_MATCH_SHOWN else ""
    first = cases[0]
    why = ("Softmax turns scores into weights that always add up to 1, so a row cannot give weight to "
           f"*nothing*. Prose may say 'none' for such a row (head {esc(first.head)} at "
           f"'{esc(first.query)}'), but the computation spreads the weight evenly and gives "
           f"{fmt(first.context)}. Real models learn to park unwanted attention on a harmless token "
           "instead (an *attention sink*).")
    return tuple(lines), more, why
