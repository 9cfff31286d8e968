"""The guided tour's questions: predict-then-reveal, with every answer read from engine results.

The tour follows the article's walkthrough on the seed scenario, then closes with one sequence's
cache becoming a server's: a few requests on one block pool (:mod:`viz.core.serving.scheduler`). Each question's options include
the engine's own number and plausible wrong ones (the values people usually guess), so the answer
checked in class is always the one kvlab computes.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.model import Trace
from ..engine.explain import fmt
from ..engine.scenario import Scenario
from ..serving.workload import ServingConfig, ServingRun, Workload, make_request


@dataclass(frozen=True)
class Question:
    prompt: str
    options: list[str]
    answer: int  # index into options
    explanation: str


LETTERS = "ABCDEFGH"  # a class votes by letter
RIGHT_MARK = "✓ right"  # after Reveal, beside the right option: marked in words, not only a colour


def option_label(question: Question, option: str, *, lettered: bool, revealed: bool) -> str:
    """How ``option`` of ``question`` reads: lettered for a class voting by letter ("C. 12.5"), and
    once revealed the right option carries :data:`RIGHT_MARK`."""
    index = question.options.index(option)
    text = f"{LETTERS[index]}. {option}" if lettered else option
    return f"{text} {RIGHT_MARK}" if revealed and index == question.answer else text


def revealed_options(question: Question, picked: str | None, *, lettered: bool,
                     class_pick: bool) -> list[tuple[str, bool]]:
    """Once revealed, every option as text, with whether it is the right one: the right one carries
    :data:`RIGHT_MARK` and the pick says so ("B. 9 (your pick)"; on the projector, the class's pick),
    so both read in full contrast where a disabled control would be grey."""
    mark = "the class's pick" if class_pick else "your pick"
    return [(option_label(question, option, lettered=lettered, revealed=True)
             + (f" ({mark})" if option == picked else ""), i == question.answer)
            for i, option in enumerate(question.options)]


def _choices(correct: float, wrong: list[float]) -> tuple[list[str], int]:
    """Distinct options in ascending order, and where the correct one landed."""
    texts = {fmt(correct)}
    for value in wrong:
        texts.add(fmt(value))
    options = sorted(texts, key=float)
    return options, options.index(fmt(correct))


def question_mask(trace: Trace) -> Question:
    tokens = trace.prefill.tokens
    return Question(
        f"Can '{tokens[1]}' (position 2) see '{tokens[2]}' (position 3) during prefill?",
        ["yes", "no"], 0 if bool(trace.prefill.attention.visible[1, 2]) else 1,
        "The causal mask hides every later position, so a token is built only from itself and "
        "the tokens before it. That is what lets prefill run all positions at once.")


def question_even(trace: Trace) -> Question:
    pre = trace.prefill
    last = len(pre.tokens) - 1
    correct = float(pre.contexts[0, last])
    values = [float(v) for v in pre.v]
    options, answer = _choices(correct, [values[last], max(values), sum(values) / len(values)])
    return Question(f"What context does the '{trace.scenario.head_names[0]}' head give at "
                    f"'{pre.tokens[last]}'?", options, answer,
                    f"The rule holds for {', '.join(t for t, m in zip(pre.tokens, pre.attention.matches[0, last]) if m)}; "
                    f"softmax splits the weight between them → {fmt(correct)}.")


def question_no_match(trace: Trace) -> Question:
    pre = trace.prefill
    correct = float(pre.contexts[0, 0])
    options, answer = ["0: it attends to nothing", fmt(correct)], 1
    return Question(f"The '{trace.scenario.head_names[0]}' head finds no match at '{pre.tokens[0]}'. "
                    "What does it give?", options, answer,
                    f"Softmax must hand out a total weight of 1, so with every score equal it spreads "
                    f"it evenly; with one visible key that is all of it → {fmt(correct)}. The article's "
                    "prose says 'none', its code prints 10.")


def question_winner(trace: Trace) -> Question:
    step = trace.steps[0]
    words = trace.scenario.vocab_tokens
    return Question("Which word gets the highest logit after prefill?", list(words), int(step.logits.argmax()),
                    "Logits: " + ", ".join(f"{w} {fmt(float(v))}" for w, v in zip(words, step.logits)) + ".")


def question_keys(full: Trace, kv: Trace) -> Question:
    a, b = full.steps[1].counts.keys_encoded, kv.steps[1].counts.keys_encoded
    options, answer = _choices(float(b), [float(a), float(a // len(kv.scenario.heads)), 0.0])
    heads = len(kv.scenario.heads)
    return Question(f"Decoding the first new token without a cache encodes {a} keys ({full.steps[1].seq_len} "
                    f"tokens × {heads} heads). How many does the KV cache encode?", options, answer,
                    f"Only the new token's key, one per head ({heads}); the other keys are read from the cache.")


def question_stale(full: Trace, kv: Trace, head: int) -> Question:
    a, b = float(full.steps[1].context[head]), float(kv.steps[1].context[head])
    options = [fmt(a), fmt(b)]
    return Question(f"With the KV cache the '{kv.scenario.head_names[head]}' head gives {fmt(b)}; recomputing "
                    f"gives {fmt(a)}. Which one does the rule '{kv.scenario.heads[head].rule}' actually mean?",
                    options, 0,
                    "Recomputing: n is now the new length, so only the newest token is 'last'. The "
                    "cached key of the old last token still says 'last', because it was encoded when n was "
                    "smaller. A key that depends on the future cannot be cached.")


# -- the closing chapter: from one sequence's cache to a server's ------------------------------
TOUR_SERVER = ServingConfig(num_blocks=12, block_size=2, max_batch=2, prefix_caching=True, overhead=4)


def tour_workload(scenario: Scenario) -> Workload:
    """Three requests sending the scenario's prompt: a long answer and a short one at once, then a third."""
    prompt = " ".join(scenario.tokens)
    rows = [("A", 0, 8), ("B", 0, 2), ("C", 6, 4)]
    return Workload("the tour", tuple(make_request(scenario, name, arrival, prompt, new)
                                      for name, arrival, new in rows))


def question_prefix(run: ServingRun, request: int) -> Question:
    """How many prompt tokens a request computes when an earlier one computed the same prompt."""
    outcome, size = run.outcomes[request], run.config.block_size
    n, hits = outcome.prompt_length, outcome.prefix_hits
    options, answer = _choices(n - hits, [0, 1, n])
    return Question(f"'{outcome.name}' sends the same {n}-token prompt that an earlier request already "
                    f"computed. With prefix caching and blocks of {size} tokens, how many of its prompt tokens "
                    "must the server still compute?", options, answer,
                    f"The first {hits} tokens fill {hits // size} full block"
                    f"{'s' if hits // size != 1 else ''} that the earlier request left in the cache, so their keys "
                    "and values are taken as they are. A block is shared only when it is full, and the last "
                    "prompt token is always computed: its query gives the first prediction.")


def question_join(continuous: ServingRun, static: ServingRun, request: int) -> Question:
    """When a late request's first token comes under continuous batching, given static batching's time."""
    name = continuous.outcomes[request].name
    fast, slow = continuous.outcomes[request].ttft, static.outcomes[request].ttft
    options, answer = _choices(fast, [slow, slow / 2, slow * 2])
    return Question(f"Two sequences fit at once. '{name}' arrives while both slots are busy. With static "
                    f"batching its first token comes {slow} ticks after it arrives. How long with continuous "
                    "batching?", options, answer,
                    f"Static batching waits until the whole batch has finished its longest "
                    f"answer; continuous batching gives '{name}' the slot of the short request the moment "
                    "that one is done.")


EPILOGUE = 2  # the tour's last steps: an optional epilogue, from one cache to a server's


def tour_footer(index: int, steps: int) -> str:
    """The line under step ``index`` (0-based) of ``steps``: the step's number among the main ones,
    none in the epilogue (a number there could read as an answer to its question)."""
    main = steps - EPILOGUE
    where = "Optional epilogue" if index >= main else f"Step {index + 1} of {main}"
    return f"{where} · ← and → move through the tour."


@dataclass(frozen=True)
class Score:
    right: int  # revealed with the right option chosen
    total: int  # questions in the tour
    unanswered: int  # revealed without a choice
    unrevealed: int


def tour_score(questions: list[Question], choices: dict[int, str | None]) -> Score:
    """Tally the choices recorded at Reveal (question index -> option text, None for no vote)."""
    right = sum(1 for i, q in enumerate(questions) if choices.get(i) == q.options[q.answer])
    unanswered = sum(1 for i in range(len(questions)) if i in choices and choices[i] is None)
    return Score(right, len(questions), unanswered, sum(1 for i in range(len(questions)) if i not in choices))
