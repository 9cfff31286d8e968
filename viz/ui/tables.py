"""The editable tables of the sidebar: scenario <-> pandas DataFrame, with row-level messages.

Pure pandas (no streamlit), so the conversions are tested directly. Reading a table back raises
:class:`viz.core.engine.scenario.ScenarioError` naming the row and column a person has to fix.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import pandas as pd

from ..core.rules.language import compile_rule
from ..core.engine.scenario import Head, Scenario, ScenarioError, VocabWord


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _cell_text(table: str, row: int, column: str, value: Any) -> str:
    if _missing(value) or not str(value).strip():
        raise ScenarioError(table, f"row {row + 1}: '{column}' is empty")
    return str(value).strip()


def _cell_number(table: str, row: int, column: str, value: Any) -> float:
    if _missing(value):
        raise ScenarioError(table, f"row {row + 1}: '{column}' is empty; type a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ScenarioError(table, f"row {row + 1}: '{column}' must be a number") from None
    if not math.isfinite(number):
        raise ScenarioError(table, f"row {row + 1}: '{column}' must be a finite number")
    return number


def _rows(frame: pd.DataFrame) -> list[tuple[int, Any, dict[str, Any]]]:
    """(display row, index label, cells) for every row, skipping rows left completely empty."""
    rows = []
    for i, (label, row) in enumerate(frame.iterrows()):
        cells = row.to_dict()
        if all(_missing(v) or (isinstance(v, str) and not v.strip()) for v in cells.values()):
            continue
        rows.append((i, label, cells))
    return rows


# -- tokens -----------------------------------------------------------------------------------
def tokens_frame(scenario: Scenario) -> pd.DataFrame:
    return pd.DataFrame({"token": list(scenario.tokens), "value": [float(v) for v in scenario.values]})


def scenario_from_tokens(scenario: Scenario, frame: pd.DataFrame) -> Scenario:
    tokens, values = [], []
    for i, _, cells in _rows(frame):
        tokens.append(_cell_text("tokens", i, "token", cells.get("token")))
        values.append(_cell_number("tokens", i, "value", cells.get("value")))
    if not tokens:
        raise ScenarioError("tokens", "the token table is empty; keep at least one token")
    return scenario.with_tokens(tokens, values)


# -- heads ------------------------------------------------------------------------------------
def heads_frame(scenario: Scenario) -> pd.DataFrame:
    """Name, rule and whether the rule's keys can be cached; the index is the head's position."""
    return pd.DataFrame({
        "name": scenario.head_names,
        "rule": [head.rule for head in scenario.heads],
        "cacheable": ["yes" if _cacheable(head.rule) else "no: reads n" for head in scenario.heads],
    })


def _cacheable(rule: str) -> bool:
    return compile_rule(rule).cacheable


def scenario_from_heads(scenario: Scenario, frame: pd.DataFrame) -> Scenario:
    """Rows keep their index label, so a kept head keeps its W_vocab weights; new rows start at 0."""
    heads, sources = [], []
    old = len(scenario.heads)
    for i, label, cells in _rows(frame):
        name = _cell_text("heads", i, "name", cells.get("name"))
        rule = _cell_text("heads", i, "rule", cells.get("rule"))
        heads.append(Head(name, rule))
        kept = isinstance(label, numbers.Integral) and 0 <= label < old and label not in sources
        sources.append(int(label) if kept else None)
    if not heads:
        raise ScenarioError("heads", "the head table is empty; keep at least one head")
    return scenario.with_heads(heads, sources)


def moved_head(scenario: Scenario, index: int, offset: int) -> Scenario:
    """The scenario with head ``index`` moved up (-1) or down (+1), weights following it."""
    order = list(range(len(scenario.heads)))
    target = index + offset
    if not 0 <= index < len(order) or not 0 <= target < len(order):
        return scenario
    order[index], order[target] = order[target], order[index]
    return scenario.with_heads([scenario.heads[i] for i in order], order)


# -- vocabulary -------------------------------------------------------------------------------
def weight_column(head_name: str) -> str:
    return f"w·{head_name}"


def vocab_frame(scenario: Scenario) -> pd.DataFrame:
    """Word, value and one weight column per head (the rows of W_vocab transposed)."""
    data: dict[str, list] = {"token": scenario.vocab_tokens, "value": [w.value for w in scenario.vocab]}
    for h, name in enumerate(scenario.head_names):
        data[weight_column(name)] = [word.weights[h] for word in scenario.vocab]
    return pd.DataFrame(data)


def scenario_from_vocab(scenario: Scenario, frame: pd.DataFrame) -> Scenario:
    words = []
    columns = [weight_column(name) for name in scenario.head_names]
    for i, _, cells in _rows(frame):
        token = _cell_text("vocab", i, "token", cells.get("token"))
        value = _cell_number("vocab", i, "value", cells.get("value"))
        weights = tuple(_cell_number("vocab", i, column, cells.get(column)) for column in columns)
        words.append(VocabWord(token, value, weights))
    if not words:
        raise ScenarioError("vocab", "the vocabulary is empty; keep at least one word")
    return scenario.with_vocab(words)
