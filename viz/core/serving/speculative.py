"""Speculative decoding on the toy: a cheap draft proposes k words, the target checks them in one pass.

Plain decoding runs the target once per new word. Speculative decoding (Leviathan et al. 2023,
Chen et al. 2023) lets a cheap **draft** guess the next k words, then runs the target **once** over
the last chosen word and all k guesses (:meth:`~viz.core.engine.model.Decoder.extend` with k + 1 tokens).
Row i of that pass is the target's distribution p after the first i guesses, so every guess can be
checked against it:

* **greedy**: guess i is kept while it is the word the target would choose; at the first miss the
  target's own choice replaces it. The output is the target's greedy output, word for word.
* **sampling**: guess d, which the draft proposed with probability q(d), is kept with probability
  min(1, p(d) / q(d)); at the first rejection the word is drawn from max(0, p − q), renormalised.
  Over the draft's and these draws, every word comes out with exactly the target's probability p.

If every guess is kept, the last row gives one more word for free (the bonus). The keys and values
of rejected guesses were appended by the verification pass; they are rolled back with
``truncate``, so the cache length visibly shrinks. Two drafts (:data:`DRAFTS`):

1. **fewer heads**: the scenario's first h heads and their rows of W_vocab, a smaller model with
   its own KV cache, run k times per round;
2. **prompt lookup**: find the earliest place where the last ``ngram`` tokens occurred before and
   propose the vocabulary words that followed it; no model at all (q puts all its mass on the guess).

Rolled-back and verified keys must be the keys decoding alone computes, so heads that read ``n``
are refused (:func:`viz.core.serving.workload.serving_refusal`), as on the rest of the Serving page.

What this module does not do: run a real model (:mod:`viz.core.real.speculative`), batch several
sequences, or tune k while decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..engine.budget import BUDGET, run_work
from ..engine.model import Decoder, Generation, ToyModel, WorkCounts, make_decoder
from ..engine.sampling import Sampler, sample
from ..timing import timed
from ..engine.scenario import Sampling, Scenario
from .workload import ServingError, serving_refusal

DRAFTS = ("fewer heads", "prompt lookup")
MAX_K = 8
MAX_SPEC_TOKENS = 64
MAX_TEMPERATURE = 1.5
# the toy's lesson opens sampling: a greedy toy's output repeats a short cycle, so any greedy draft
# settles on one guess per round and the rounds all look alike (issue 32, item 7)
TEMPERATURE = 0.7


@dataclass(frozen=True)
class DraftSpec:
    """Which draft, and its one setting."""

    kind: str = "fewer heads"  # one of DRAFTS
    heads: int = 1  # fewer heads: the draft keeps the scenario's first `heads` heads
    ngram: int = 2  # prompt lookup: match the last `ngram` tokens


def greedy(settings: Sampling) -> bool:
    return settings.strategy == "greedy" or settings.temperature == 0


def with_temperature(settings: Sampling, temperature: float) -> Sampling:
    """``settings`` at ``temperature``: greedy at 0, else sampling; top-k, top-p and the seed kept."""
    if not 0 <= temperature <= MAX_TEMPERATURE:
        raise ServingError(f"the temperature is 0 (greedy) to {MAX_TEMPERATURE}")
    return replace(settings, strategy="sample" if temperature else "greedy", temperature=temperature or 1.0)


def opening_temperature(settings: Sampling) -> float:
    """The temperature the toy's speculative lesson opens at: the scenario's own where it samples,
    else :data:`TEMPERATURE` (0 gives greedy decoding back)."""
    return TEMPERATURE if greedy(settings) else min(settings.temperature, MAX_TEMPERATURE)


def distribution(logits: torch.Tensor, settings: Sampling) -> tuple[torch.Tensor, int]:
    """(p, the greedy choice): the probabilities sampling would use, without drawing anything."""
    result = sample(logits, replace(settings, strategy="greedy"))
    return result.probs, result.index


def accept(p: torch.Tensor, q: torch.Tensor, guess: int, choice: int, settings: Sampling,
           generator: torch.Generator) -> tuple[bool, int | None, float]:
    """The rule for one guess: (kept, the replacement word if not, the uniform draw or -1 when greedy).

    p and q are the target's and the draft's distributions (vocab,) at this position, ``choice`` the
    target's greedy choice there.
    """
    if greedy(settings):
        return choice == guess, (None if choice == guess else choice), -1.0
    u = float(torch.rand((), generator=generator, dtype=torch.float64))
    if u < min(1.0, float(p[guess]) / float(q[guess])):  # q[guess] > 0: the draft proposed it
        return True, None, u
    residual = torch.clamp(p - q, min=0.0)
    if float(residual.sum()) <= 0:  # p ≤ q everywhere means p == q, and then nothing is rejected
        residual = p
    return False, int(torch.multinomial(residual / residual.sum(), 1, generator=generator)), u


@dataclass(frozen=True)
class Verdict:
    """The rule applied to one round's guesses."""

    accepted: int  # guesses kept
    new: int  # the replacement at the first rejection, or the bonus after the last row
    bonus: bool
    p_guess: tuple[float, ...]  # the target's probability of each guess checked
    draws: tuple[float, ...]  # the uniform draw behind each check (-1 when greedy)


def judge(rows: list[torch.Tensor], guesses: list[int], qs: list[torch.Tensor], settings: Sampling,
          generator: torch.Generator) -> Verdict:
    """Check the guesses in order against the verification pass's rows (row i: the logits after the
    fed word and the first i guesses); the first rejection ends the round."""
    kept, draws, p_guess, new = 0, [], [], None
    for i, guess in enumerate(guesses):
        p, choice = distribution(rows[i], settings)
        p_guess.append(float(p[guess]))
        ok, replacement, u = accept(p, qs[i], guess, choice, settings, generator)
        draws.append(u)
        if not ok:
            new = replacement
            break
        kept += 1
    bonus = new is None
    if bonus:
        new = sample(rows[kept], settings, generator).index  # every guess kept: the last row's word comes free
    return Verdict(kept, new, bonus, tuple(p_guess), tuple(draws))


@dataclass(frozen=True)
class Round:
    """One draft-then-verify round."""

    index: int
    cache_before: int  # target cache length when the round starts
    fed: str  # the last chosen word, fed with the guesses
    guesses: tuple[str, ...]
    p_guess: tuple[float, ...]  # the target's probability of each guess
    q_guess: tuple[float, ...]  # the draft's
    draws: tuple[float, ...]  # the uniform draw checked against each guess (sampling; -1 when greedy)
    accepted: int  # guesses kept
    new_word: str  # the target's replacement at the first rejection, or the bonus
    bonus: bool  # every guess was kept: the new word comes from the last row for free
    cache_verified: int  # after the verification pass appended the fed word and every guess
    cache_after: int  # after the rejected guesses were rolled back
    target_work: WorkCounts
    draft_work: WorkCounts
    target_seconds: float
    draft_seconds: float

    @property
    def words(self) -> tuple[str, ...]:
        """The words this round adds to the output."""
        return self.guesses[: self.accepted] + (self.new_word,)


class RoundsSummary:
    """What every speculative run reports from its rounds (a mixin for the toy's and the real model's)."""

    rounds: tuple[Round, ...]
    words: tuple[str, ...]
    plain_words: tuple[str, ...]
    seconds: float
    plain_seconds: float

    @property
    def drafted(self) -> int:
        return sum(len(r.guesses) for r in self.rounds)

    @property
    def accepted(self) -> int:
        return sum(r.accepted for r in self.rounds)

    @property
    def acceptance(self) -> float:
        """The share of guesses the target kept."""
        return self.accepted / self.drafted if self.drafted else 0.0

    @property
    def target_passes(self) -> int:
        """The prefill and one verification pass per round."""
        return 1 + len(self.rounds)

    @property
    def plain_passes(self) -> int:
        """Plain decoding: the prefill, then one pass per word after the first."""
        return len(self.plain_words)

    @property
    def extra_passes(self) -> int:
        """Target passes against plain decoding's (negative: passes saved)."""
        return self.target_passes - self.plain_passes

    @property
    def extra_seconds(self) -> float:
        """Measured seconds against plain decoding's (negative: time saved)."""
        return self.seconds - self.plain_seconds

    @property
    def same_words(self) -> bool:
        return self.words == self.plain_words


@dataclass(frozen=True)
class SpecRun(RoundsSummary):
    """Speculative decoding beside plain decoding of the same prompt, with the same target."""

    scenario: Scenario
    draft: DraftSpec
    k: int
    prompt: tuple[str, ...]
    first_word: str  # prediction 0, from the prefill
    rounds: tuple[Round, ...]
    words: tuple[str, ...]  # every prediction, speculative
    logits: torch.Tensor  # (predictions, vocab) the target's logits behind each
    plain_words: tuple[str, ...]
    plain_logits: torch.Tensor
    plain_work: WorkCounts  # the target decoding alone, one pass per word
    plain_seconds: float
    prefill_work: WorkCounts  # the same prefill in both
    prefill_seconds: float
    greedy: bool

    @property
    def target_work(self) -> WorkCounts:
        return sum((r.target_work for r in self.rounds), self.prefill_work)

    @property
    def draft_work(self) -> WorkCounts:
        return sum((r.draft_work for r in self.rounds), WorkCounts())

    @property
    def seconds(self) -> float:
        """Measured: the prefill and every round, draft and target, as plain_seconds counts the same prefill."""
        return self.prefill_seconds + sum(r.target_seconds + r.draft_seconds for r in self.rounds)

    @property
    def max_logit_diff(self) -> float:
        """The largest |logit difference| against plain decoding up to the first word the two chose
        differently (sampling draws other words; greedy decoding agrees throughout)."""
        n = min(len(self.words), len(self.plain_words))
        agree = next((i for i in range(n) if self.words[i] != self.plain_words[i]), n - 1) + 1
        return float((self.logits[:agree] - self.plain_logits[:agree]).abs().max()) if n else 0.0


def draft_scenario(scenario: Scenario, heads: int) -> Scenario:
    """The scenario's first ``heads`` heads with their rows of W_vocab: a smaller model, same words."""
    if not 1 <= heads <= len(scenario.heads):
        raise ValueError(f"the draft keeps 1 to {len(scenario.heads)} heads")
    return scenario.with_heads(list(scenario.heads[:heads]), list(range(heads)))


class _HeadsDraft:
    """A smaller toy model with its own cache, kept in step with the target's accepted tokens."""

    def __init__(self, scenario: Scenario, heads: int, seed: int):
        small = draft_scenario(scenario, heads)
        self.model = ToyModel(small)
        self.decoder: Decoder = make_decoder("kv", self.model)
        self.sampler = Sampler(small.sampling, seed)
        self.vocab = small.vocab

    def start(self, tokens: list[str], values: list[float]) -> WorkCounts:
        return self.decoder.prefill(tokens, values).attention.counts

    def propose(self, tokens: list[str], values: list[float], k: int,
                settings: Sampling) -> tuple[list[int], list[torch.Tensor], WorkCounts]:
        """k guesses after ``tokens`` (the target's sequence, last chosen word included)."""
        work = WorkCounts()
        held = list(zip(self.decoder.tokens, self.decoder.values))
        common = 0
        for a, b in zip(held, zip(tokens, values)):
            if a != b:
                break
            common += 1
        _rollback(self.decoder, min(common, len(tokens) - 1))  # guesses the target did not keep go
        feed_t, feed_v = tokens[len(self.decoder.tokens):], values[len(self.decoder.tokens):]
        guesses, qs = [], []
        for _ in range(k):
            result = self.decoder.extend(feed_t, feed_v)
            work = work + result.attention.counts
            logits = self.model.logits(result.attention.contexts[:, -1].to(self.model.device))
            q, choice = distribution(logits, settings)
            if not greedy(settings):
                choice = int(torch.multinomial(q, 1, generator=self.sampler.generator))
            else:
                q = torch.nn.functional.one_hot(torch.tensor(choice), q.shape[0]).to(q.dtype)
            guesses.append(choice)
            qs.append(q)
            feed_t, feed_v = [self.vocab[choice].token], [self.vocab[choice].value]
        return guesses, qs, work


class _LookupDraft:
    """Prompt lookup: the words that followed the latest earlier match of the last n tokens."""

    def __init__(self, scenario: Scenario, ngram: int):
        self.ngram = ngram
        self.index = {(w.token, w.value): i for i, w in reversed(list(enumerate(scenario.vocab)))}
        self.vocab_size = len(scenario.vocab)

    def start(self, tokens: list[str], values: list[float]) -> WorkCounts:
        return WorkCounts()

    def propose(self, tokens: list[str], values: list[float], k: int,
                settings: Sampling) -> tuple[list[int], list[torch.Tensor], WorkCounts]:
        pairs = list(zip(tokens, values))
        tail = pairs[-self.ngram:]
        guesses: list[int] = []
        for start in range(len(pairs) - self.ngram):  # the earliest match, as transformers' prompt lookup
            if pairs[start:start + self.ngram] == tail:
                for pair in pairs[start + self.ngram: start + self.ngram + k]:
                    if pair not in self.index:  # only vocabulary words can be generated
                        break
                    guesses.append(self.index[pair])
                if guesses:
                    break
        eye = torch.eye(self.vocab_size, dtype=torch.float64)
        return guesses, [eye[g] for g in guesses], WorkCounts()


def _rollback(decoder: Decoder, length: int) -> None:
    """Forget every token after the first ``length``: the cache and the decoder's record of them."""
    decoder.cache.truncate(length)
    del decoder.tokens[length:], decoder.values[length:]


class _Target:
    """The target model's side: its cache, its sampler, and one verification pass per round."""

    def __init__(self, scenario: Scenario):
        self.model = ToyModel(scenario)
        self.decoder = make_decoder("kv", self.model)
        self.sampler = Sampler(scenario.sampling, scenario.sampling.seed)
        self.settings, self.vocab = scenario.sampling, scenario.vocab
        self.logit_work = WorkCounts(multiply_adds=self.model.num_heads * len(self.vocab))

    def prefill(self, tokens: list[str], values: list[float]) -> tuple[int, torch.Tensor, WorkCounts]:
        """The prompt in one pass, and prediction 0: (word, logits, work)."""
        result = self.decoder.prefill(tokens, values)
        logits = self.model.logits(result.contexts[:, -1])
        return self.sampler(logits).index, logits.cpu(), result.attention.counts + self.logit_work

    def verify(self, word: int, guesses: list[int], qs: list[torch.Tensor]) -> dict:
        """Feed the last chosen word and every guess in one pass; keep guesses by the rule; roll back."""
        before = len(self.decoder.cache)
        fed = [self.vocab[word]] + [self.vocab[g] for g in guesses]
        result = self.decoder.extend([w.token for w in fed], [w.value for w in fed])  # k + 1 rows
        rows = [self.model.logits(result.attention.contexts[:, i]) for i in range(len(fed))]
        verified = len(self.decoder.cache)
        verdict = judge(rows, guesses, qs, self.settings, self.sampler.generator)
        _rollback(self.decoder, before + 1 + verdict.accepted)  # the fed word and the kept guesses stay
        work = result.attention.counts + WorkCounts(multiply_adds=self.logit_work.multiply_adds * len(fed))
        return dict(verdict=verdict, cache_before=before, cache_verified=verified,
                    cache_after=len(self.decoder.cache), target_work=work,
                    logits=[r.cpu() for r in rows[: verdict.accepted + 1]])


def speculate(scenario: Scenario, new_tokens: int, k: int, draft: DraftSpec = DraftSpec(), *,
              tokens: list[str] | None = None, values: list[float] | None = None) -> SpecRun:
    """Make ``new_tokens`` predictions speculatively (k guesses per round), and plainly for comparison."""
    if not 1 <= new_tokens <= MAX_SPEC_TOKENS:
        raise ServingError(f"make 1 to {MAX_SPEC_TOKENS} predictions")
    if not 1 <= k <= MAX_K:
        raise ServingError(f"the draft guesses 1 to {MAX_K} words per round")
    if draft.kind not in DRAFTS:
        raise ServingError(f"the draft is one of {', '.join(DRAFTS)}")
    refusal = serving_refusal(scenario)
    if refusal:
        raise ServingError(refusal)
    tokens = list(scenario.tokens if tokens is None else tokens)
    values = list(scenario.values if values is None else values)
    # the plain run, the target (as much again: guesses are fed too) and a draft of at most its size
    work = run_work(replace(scenario, tokens=tuple(tokens), values=tuple(values)), "kv", new_tokens)
    if 3 * work.ms > BUDGET.ms or work.peak_bytes > BUDGET.peak_bytes:
        raise ServingError(f"{new_tokens} words after a {len(tokens)}-token prompt with {len(scenario.heads)} "
                           f"heads × d_k {scenario.d_k} need more engine work than one click may take here; "
                           "make fewer words, or use a shorter prompt, fewer heads or a smaller d_k")
    plain = Generation(scenario, "kv")

    def decode_plainly() -> None:
        plain.prefill(tokens, values)
        for _ in range(new_tokens - 1):
            plain.step()

    plain_seconds, _ = timed(decode_plainly, plain.model.device)
    target = _Target(scenario)
    helper = (_HeadsDraft(scenario, draft.heads, scenario.sampling.seed + 1) if draft.kind == "fewer heads"
              else _LookupDraft(scenario, draft.ngram))
    device, vocab = target.model.device, scenario.vocab
    prefill_seconds, (word, first_logits, prefill_work) = timed(lambda: target.prefill(tokens, values), device)
    helper.start(tokens, values)
    words, logits = [word], [first_logits]
    rounds: list[Round] = []
    while len(words) < new_tokens:
        seq_t = target.decoder.tokens + [vocab[word].token]
        seq_v = target.decoder.values + [vocab[word].value]
        budget = min(k, new_tokens - len(words) - 1)  # never guess past the last prediction
        draft_seconds, (guesses, qs, draft_work) = timed(
            lambda: helper.propose(seq_t, seq_v, budget, scenario.sampling), device)
        target_seconds, out = timed(lambda: target.verify(word, guesses, qs), device)
        verdict = out["verdict"]
        rounds.append(Round(len(rounds), out["cache_before"], vocab[word].token,
                            tuple(vocab[g].token for g in guesses), verdict.p_guess,
                            tuple(float(q[g]) for q, g in zip(qs, guesses)), verdict.draws, verdict.accepted,
                            vocab[verdict.new].token, verdict.bonus, out["cache_verified"], out["cache_after"],
                            out["target_work"], draft_work, target_seconds, draft_seconds))
        words += guesses[: verdict.accepted] + [verdict.new]
        logits += out["logits"]
        word = verdict.new
    return SpecRun(scenario, draft, k, tuple(tokens), vocab[words[0]].token, tuple(rounds),
                   tuple(vocab[w].token for w in words), torch.stack(logits),
                   tuple(s.token for s in plain.steps), torch.stack([s.logits for s in plain.steps]),
                   sum((s.counts for s in plain.steps), WorkCounts()), plain_seconds, prefill_work,
                   prefill_seconds, greedy(scenario.sampling))
