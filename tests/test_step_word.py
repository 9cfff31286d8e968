"""One step control (issue 32): every page's control that moves its lesson on is labelled "Step" (alone,
or "Step · <what a step is there>", viz.core.text.step_label) and says in its help what one step is,
so a student learns one control: not Query position, Scheduler iteration, Round, Tile or Next token."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from apptest_helpers import ALL_PAGES
from viz.core.lessons import words_memory, words_prefill
from viz.core.real import words as real_words
from viz.core.serving import words as serving_words
from viz.core.text import STEP, step_label

ROOT = Path(__file__).resolve().parents[1]
LABELS = {words_prefill.STEP_LABEL: words_prefill.STEP_HELP,
          words_memory.ITERATION_STEP: words_memory.ITERATION_STEP_HELP,
          words_memory.PREDICTION_STEP: words_memory.PREDICTION_STEP_HELP,
          serving_words.ITERATION_STEP: serving_words.ITERATION_STEP_HELP,
          serving_words.ROUND_STEP: serving_words.ROUND_STEP_HELP,
          serving_words.TILE_STEP: serving_words.TILE_STEP_HELP}


def _is_step(label: str) -> bool:
    return label == STEP or label.startswith(f"{STEP} · ")


def test_every_step_label_the_words_modules_make_says_step_first_and_its_help_what_a_step_is():
    """The core's step labels are all "Step · <unit>", each help opening "One step is one <unit>"
    (Real model's button is plain "Step")."""
    assert step_label() == STEP == real_words.STEP and step_label("tile") == "Step · tile"
    for label, help_ in LABELS.items():
        unit = label.removeprefix(f"{STEP} · ")
        assert _is_step(label) and unit != label, label
        assert help_.startswith("One step ") and unit.split()[-1] in help_, (label, help_)
    assert real_words.next_help("→").startswith("One step")


def _stepper_labels(path: Path) -> list[ast.expr]:
    """The label argument of every stepper(...) call in a page script."""
    labels = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "stepper":
            labels += [node.args[2]] if len(node.args) > 2 else [k.value for k in node.keywords if k.arg == "label"]
    return labels


@pytest.mark.parametrize("page", ALL_PAGES)
def test_no_page_names_its_step_control_in_words_of_its_own(page):
    """A page's steppers take their label from a words module (never a literal of the page's own,
    but the plain word Step) and say what a step is in a help."""
    for label in _stepper_labels(ROOT / page):
        if isinstance(label, ast.Constant):
            assert label.value == STEP, (page, label.value)
        else:
            assert isinstance(label, ast.Attribute) and label.attr in {
                name for module in (words_prefill, words_memory, serving_words)
                for name, value in vars(module).items() if isinstance(value, str) and value in LABELS}, (page, ast.unparse(label))


@pytest.mark.parametrize("page, forward", [("pages/prefill.py", None), ("pages/decode.py", "decode_step"),
                                           ("pages/memory.py", None), ("pages/serving.py", None),
                                           ("pages/tour.py", None)])
def test_every_page_steps_with_a_control_labelled_step(app, page, forward):
    """Opened as a visitor opens it, each stepped page shows a step control, and every stepper there
    (a slider, or a few chips, between ← and →) and every forward button is labelled Step, with a help."""
    app.switch_page(page).run()
    assert not app.exception, app.exception
    steppers = [s for s in [*app.select_slider, *app.button_group] if str(s.key).endswith("_range")]
    buttons = [b for b in app.button if b.key == forward] if forward else []
    assert steppers or buttons, f"{page}: no step control"
    assert all(_is_step(s.label) for s in steppers), [s.label for s in steppers]
    assert all(s.help for s in steppers if s.label != STEP), [s.label for s in steppers]
    assert all(b.label == STEP and b.help for b in buttons), [b.label for b in buttons]


def test_a_name_is_clipped_after_a_whole_word_or_inside_a_long_one():
    """clip_words keeps a name that fits, cuts a longer one after its last whole word (an ellipsis
    marks it, no trailing punctuation before it), and inside a word that would leave less than half."""
    from viz.core.text import clip_words

    assert clip_words("1 · Today", 40) == "1 · Today"
    cut = clip_words("10. Epilogue: who computes in each iteration", 40)
    assert cut == "10. Epilogue: who computes in each…" and len(cut) <= 40
    assert clip_words("Epilogue: supercalifragilisticexpialidocious", 20) == "Epilogue: supercali…"
