"""The guided tour's questions: predict-then-reveal, with every answer read from engine results.

The tour follows the article's walkthrough on the seed scenario, then closes with one sequence's
cache becoming a server's: a few requests on one block pool (:mod:`viz.core.serving.scheduler`). Each question's options include
the engine's own number and plausible wrong ones (the values people usually guess), so the answer
checked in class is always the one kvlab computes.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from ..engine.model import MODES, Trace, generate
from ..engine.explain import CacheCheck, RowExplanation, check_cache, explain_position, fmt
from ..engine.presets import load_preset
from ..engine.scenario import Scenario
from ..serving.scheduler import serve
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


FORWARD = "the → button above (or the keys →, PageDown, Space) goes on"  # the footer's ways, each where on
BACKWARD = "← (or PageUp) goes back"


def tour_footer(index: int, steps: int) -> str:
    """The line under step ``index`` (0-based) of ``steps``: the step's number among the main ones,
    none in the epilogue (a number there could read as an answer to its question)."""
    main = steps - EPILOGUE
    where = "Optional epilogue" if index >= main else f"Step {index + 1} of {main} (then an optional epilogue)"
    ways = ([FORWARD] if index < steps - 1 else []) + ([BACKWARD] if index > 0 else [])  # none that is off
    return f"{where} · {', '.join(ways)}." if ways else f"{where}."



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


# -- the tour's words: every sentence the page shows around its figures, tables and questions -------
TOUR_TITLE = "Guided tour"
# presenter mode's first line (after the tour's name in bold: viz.ui.common.lesson_header) says what the
# teacher does on the step shown: on a step with a question the vote; on a step without one what to show
# the class there (the vote's line, on every step, told a teacher to press a Reveal the step does not have)
PRESENTER_LEAD = "Read the question aloud, let the class vote by letter, then press Reveal."
NO_VOTE_LEADS = {  # step index (0-based) -> the teacher's task on that step, which asks nothing
    0: "No vote here: go through the values and the four heads' rules, then press →.",
    6: "No vote here: show the new token's outlined column, then the work charts; press →.",
}
LEAD_CHARS = 86  # after "Guided tour · ", a lead shares presenter mode's first line with the sidebar's hint at 1280 px
STEP_TITLES = (
    "The prompt, its values and four heads",
    "Prefill and the causal mask",
    "Scores, weights and contexts",
    "When nothing matches",
    "From the context to the next word",
    "Decode without a cache",
    "Decode with the KV cache",
    "The cache bug in the article",
    "Epilogue: many caches, one pool of blocks",
    "Epilogue: who computes in each iteration",
)
PROMPT_VALUES = ("The prompt is split into tokens, and each token gets one number, its **value**: the "
                 "information it carries. 'Today' and 'weather' carry more than 'is' and 'so'.")
PROMPT_HEADS = ("Four attention heads each follow one rule. Real heads learn their patterns; these are "
                "written by hand so every number can be checked.")
HEAD_RULES_IN_WORDS = ["tokens at even positions", "the last token", "the first token", "every token"]
MASK_INTRO = ("Prefill handles every position of the prompt **in one pass**. To keep a token from "
              "looking ahead, a causal mask hides some positions before the softmax.")
CONTEXTS_INTRO = ("Each head scores every visible key: +√d_k = +8 where its rule holds, −8 where it does "
                  "not (d_k = 64). Softmax turns the scores into weights, and the context is the weighted sum of "
                  "values.")
LAST_POSITION = "At the last position, every head:"
NOTHING_INTRO = "What does a head do when its rule matches **no** visible key?"
LOGITS_INTRO = ("The context of the last position, one number per head, is multiplied by W_vocab: one "
                "column per word, one row per head. The result is a logit per word.")
NO_CACHE_INTRO = ("The model appends the word it predicted and predicts again. Without a cache, **every** "
                  "key and value is computed again for the longer sequence, though only one token is new.")
CACHE_INTRO = ("With a **KV cache**, prefill stores every key and value once. Each decode step computes "
               "only the new token's key and value, appends them, and lets the new query read the rest.")
CACHE_NOTE = ("Over 8 steps without a cache the keys encoded add up with n² (recomputing everything), "
              "with the cache they add up with n.")
# no intro ends in a colon: the step's answer (a table, a figure) shows only after Reveal, and above the
# intro then, so "kvlab computes both:" pointed at nothing before Reveal and up at the table after it
BUG_INTRO = ("The article prints the same decode context with and without the cache, and they "
             "differ in one head. kvlab computes both, for every head.")
BUG_FIX = ("The cache-safe form of the rule reads the **query's** position instead of n: "
           "`k.pos == q.pos`, 'attend to self'. The *cache-safe* preset uses it; there the cache "
           "and recomputation agree at every step.")
EPILOGUE_NOTE = "Optional epilogue, in two steps: what a server does with many caches at once."
POOL_INTRO = ("One sequence keeps one growing cache. A server keeps **many** at once, cut into fixed-size "
              "**blocks** of one pool. Here three requests send the seed's prompt, its heads made *cache-safe* "
              "(none reads n), and "
              "**prefix caching** lets a request take the full blocks an earlier one already computed.")
BATCHING_INTRO = ("At every **iteration** the server decides who computes: new prompts (prefill), one more "
                  "token for each running request (decode), or nobody while memory is short. Time is counted in "
                  "**ticks**: one per token computed, plus a fixed cost per iteration. Two requests fit at once.")
# the batching figure's title and its two timelines' labels (static batching's alone until Reveal, then
# continuous batching's under it on the same time axis): one line a phone's figure holds (Plotly titles do
# not wrap; the static one ran past it)
BATCHING_TITLE = "Three requests, two slots (time in ticks)"
STATIC_TITLE = "Static batching: C waits for the whole batch"
CONTINUOUS_TITLE = "Continuous batching: C takes B's freed slot"
SERVERS_NOTE = ("The same ideas run real servers (vLLM, TGI, TensorRT-LLM): paged blocks, continuous "
                "batching, chunked prefill, prefix caching, speculative decoding and FlashAttention. The "
                "Serving page runs each of them on your scenario.")
SCORE_LATER = "Your score appears here once the last question is revealed."
# on the projector the answers recorded are the class's (the teacher picks the class's answer): so is the score
CLASS_SCORE_LATER = "The class's score appears here once the last question is revealed."
# each step's question (index into TourView.questions), None where the step shows without asking
STEP_QUESTIONS = (None, 0, 1, 2, 3, 4, None, 5, 6, 7)


@dataclass(frozen=True)
class TourStep:
    """One step of the tour as the page shows it: its title, its question and presenter mode's lead."""

    title: str
    question: int | None  # index into TourView.questions; None: the step asks nothing
    lead: str  # presenter mode's first line: what the teacher does on this step


def tour_steps() -> tuple[TourStep, ...]:
    """Every step, in order: a step with a question leads with the vote, one without with its own task."""
    return tuple(TourStep(title, question, PRESENTER_LEAD if question is not None else NO_VOTE_LEADS[index])
                 for index, (title, question) in enumerate(zip(STEP_TITLES, STEP_QUESTIONS, strict=True)))


def tour_intro(article_link: str) -> str:
    """The tour's opening paragraph, the article named by ``article_link`` (Markdown)."""
    return (f"The worked example of the article {article_link}, step by step. Commit to an answer before "
            "you reveal it; your score is on the last step. The tour always uses the seed scenario; the other "
            "pages use yours.")


def ask_line(prompt: str, *, presenter: bool, revealed: bool = False) -> str:
    """The question's line: a vote on the projector, a prediction on one screen (``prompt`` escaped).
    Once revealed, the projector's is body text: the answer under it then fits the screen (the
    epilogue's five-line question and its answer ran past 720 px)."""
    if presenter and not revealed:
        return f"#### Vote first: {prompt}"
    return f"**{'Vote' if presenter else 'Predict first'}:** {prompt}"


def verdict(right: str, picked: str | None, explanation: str, *, class_pick: bool = False) -> tuple[str, str]:
    """How a revealed answer reads, and its kind ("info" without a vote, "success", "error"); the
    arguments are Markdown, escaped by the caller. ``class_pick``: the pick was the class's (presenter
    mode, where the options say "the class's pick"), so the verdict speaks of the class, not "you"."""
    if picked is None:
        return "info", f"Answer: **{right}**. {explanation}"
    if picked == right:
        return "success", f"Right: **{right}**. {explanation}"
    who = "the class" if class_pick else "you"
    return "error", f"Not quite: {who} chose {picked}, it is **{right}**. {explanation}"


def score_line(tally: Score, *, class_pick: bool = False) -> str:
    """The tally under the last step (Markdown): the class's on the projector, where the answers
    recorded are the class's picks, the visitor's own elsewhere."""
    whose = "The class's" if class_pick else "Your"
    return (f"**{whose} score: {tally.right} of {tally.total}** right"
            + (f" ({tally.unanswered} revealed without a vote, {tally.unrevealed} not revealed yet)."
               if tally.unanswered or tally.unrevealed else "."))


# -- the tour's view: every run, question and answer worked out before a step is drawn ------------
TOUR_PRESET = "seed"  # the tour always walks the seed scenario


@dataclass(frozen=True)
class TourView:
    """Everything the guided tour shows, on the seed scenario: its runs, the server's two runs of the
    epilogue and every question, answered from them."""

    scenario: Scenario
    prefill: Trace  # the prompt prefilled, one prediction
    runs: dict[str, Trace]  # nine predictions in each decoding mode
    cache_run: Trace  # two predictions with the KV cache (the cache figure)
    last_head: int  # the head whose rule cannot be cached (the article's bug)
    last_position: tuple[RowExplanation, ...]  # every head's choice at the prompt's last position
    cache_check: CacheCheck  # the cache against recomputing, first decode step
    keys_answer: str  # the first decode step's keys, without and with the cache
    continuous: ServingRun  # the epilogue's requests, continuous batching
    static: ServingRun  # the same requests, static batching
    shared_iteration: int  # the first iteration where two requests share a block
    work_title: str  # the work chart's title beside the cache figure: one line in half a projector
    questions: tuple[Question, ...]  # every question, in order (index = its number in the tour)
    steps: tuple[TourStep, ...]  # every step, in order: its title, question and presenter lead

    @property
    def kv(self) -> Trace:
        return self.runs["kv"]

    @property
    def full(self) -> Trace:
        return self.runs["recompute"]


@functools.lru_cache(maxsize=1)  # the same for every visitor (the seed, fixed): worked out once, only read
def tour_view() -> TourView:
    """The tour's runs and questions on the seed scenario (about 0.3 s of CPU, once per process)."""
    seed = load_preset(TOUR_PRESET)
    prefill = generate(seed, 1)
    runs = {mode: generate(seed, 9, mode) for mode in MODES}
    kv, full = runs["kv"], runs["recompute"]
    last_head = next(h for h, ok in enumerate(kv.cacheable) if not ok)
    served, workload = seed.cache_safe(), tour_workload(seed.cache_safe())
    continuous = serve(served, workload, TOUR_SERVER)
    static = serve(served, workload, replace(TOUR_SERVER, policy="static"))
    keys = (" ".join(f"{w}" for w in full.tokens[:5]),
            f"{full.steps[1].counts.keys_encoded} keys encoded without a cache, "
            f"{kv.steps[1].counts.keys_encoded} with it")
    return TourView(
        scenario=seed, prefill=prefill, runs=runs, cache_run=generate(seed, 2, "kv"), last_head=last_head,
        last_position=tuple(explain_position(prefill, len(prefill.prefill.tokens) - 1)),
        cache_check=check_cache(kv, full, 1), keys_answer=" → ".join(keys), continuous=continuous, static=static,
        work_title=f"Work summed over {len(kv.steps) - 1} decode steps",
        shared_iteration=next(it.index for it in continuous.iterations if any(len(b.owners) > 1 for b in it.blocks)),
        questions=(question_mask(prefill), question_even(prefill), question_no_match(prefill),
                   question_winner(prefill), question_keys(full, kv), question_stale(full, kv, last_head),
                   question_prefix(continuous, 2), question_join(continuous, static, 2)),
        steps=tour_steps())
