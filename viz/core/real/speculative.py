"""Speculative decoding on a real model: the target checks a draft's guesses in one pass over its
transformers ``DynamicCache`` and crops the rejected ones away.

The rule is the toy's (:func:`viz.core.serving.speculative.accept`): greedy keeps a guess while it is the
target's own choice; sampling keeps it with probability min(1, p/q) and draws a replacement from
max(0, p − q). Drafts (:data:`REAL_DRAFTS`):

1. **prompt lookup**: the tokens that followed the earliest earlier occurrence of the last
   ``ngram`` tokens (what transformers' ``prompt_lookup_num_tokens`` does); free, and good at the
   repetitive text small models produce.
2. **early exit** (self-speculation): the target's own first ``layers`` layers, then its final norm
   and output layer, as a smaller model with its own cache. Layer-skipping drafts (LayerSkip) train
   the model to exit early; the shipped model was not, so its early exits guess worse.
3. **another model**: any causal LM with the same tokenizer (pass ``draft_model``), e.g. a small
   model drafting for a larger one; kvlab ships a Llama of about the GPT-2's size with its tokenizer,
   which shows the mechanics (and how often two models agree) but not a speed-up.

What this module does not do: train a draft, share the draft's cache with the target's, or run
batched sequences.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import torch

from ..engine.model import WorkCounts
from ..engine.sampling import Sampling, sample
from ..serving.speculative import Round, RoundsSummary, distribution, greedy, judge
from ..timing import timed
from .model import GREEDY, CachedDecoder, RealModel, RealModelError, check_sampling, piece

REAL_DRAFTS = ("prompt lookup", "early exit", "another model")
MAX_REAL_K = 8
MAX_REAL_TOKENS = 64


@dataclass(frozen=True)
class RealSpecRun(RoundsSummary):
    """Speculative decoding of a real model beside plain cached decoding of the same prompt."""

    draft: str  # how the guesses were made, in words
    k: int
    prompt: tuple[str, ...]  # pieces
    rounds: tuple[Round, ...]  # guesses and words as pieces; work counted in tokens (queries)
    ids: tuple[int, ...]  # every new token, speculative
    words: tuple[str, ...]  # their pieces
    plain_ids: tuple[int, ...]
    plain_words: tuple[str, ...]
    max_logit_diff: float  # largest |logit difference| against plain decoding while the two agree
    seconds: float  # speculative: prefill and every round, measured
    plain_seconds: float  # plain cached decoding: prefill and one pass per token
    greedy: bool


def early_exit_model(real: RealModel, layers: int) -> RealModel:
    """The target's first ``layers`` layers with its final norm and output layer, sharing its weights."""
    from transformers import AutoModelForCausalLM

    total = real.shape.layers
    if not 1 <= layers < total:
        raise RealModelError(f"an early exit keeps 1 to {total - 1} of the model's {total} layers")
    config = copy.deepcopy(real.model.config)
    config.num_hidden_layers = layers
    small = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    own = small.state_dict()
    small.load_state_dict({k: v for k, v in real.model.state_dict().items() if k in own}, assign=True)
    small = small.to(real.device).eval().requires_grad_(False)
    parameters = sum(p.numel() for p in small.parameters())
    return replace(real, model=small, name=f"{real.name}, first {layers} layers",
                   shape=replace(real.shape, layers=layers, parameters=parameters))


def _extend(decoder: CachedDecoder, ids: list[int]) -> torch.Tensor:
    """Feed m tokens in one pass over the cache; the logits after each: (m, vocab)."""
    decoder._room_for(len(ids))
    decoder.ids += ids
    with torch.inference_mode():
        x = torch.tensor([ids], device=decoder.real.device)  # (1, m)
        out = decoder.real.model(input_ids=x, past_key_values=decoder.cache, use_cache=True)
    return out.logits[0].float().cpu()  # (m, vocab)


class _ModelDraft:
    """A smaller model with its own cache, rolled back to the target's accepted tokens each round."""

    def __init__(self, real: RealModel, seed: int):
        self.decoder = CachedDecoder(real)
        self.generator = torch.Generator().manual_seed(seed)

    def start(self, ids: list[int]) -> None:
        self.decoder.prefill(ids)

    def propose(self, ids: list[int], k: int, settings: Sampling) -> tuple[list[int], list[torch.Tensor], int]:
        common = 0
        for a, b in zip(self.decoder.ids, ids):
            if a != b:
                break
            common += 1
        common = min(common, len(ids) - 1)
        if common < len(self.decoder.ids):
            self.decoder.rewind(len(self.decoder.ids) - common)
        feed, guesses, qs, fed = ids[common:], [], [], 0
        for _ in range(k):
            logits = _extend(self.decoder, feed)[-1]
            fed += len(feed)
            q, choice = distribution(logits, settings)
            if greedy(settings):
                q = torch.nn.functional.one_hot(torch.tensor(choice), q.shape[0]).to(q.dtype)
            else:
                choice = int(torch.multinomial(q, 1, generator=self.generator))
            guesses.append(choice)
            qs.append(q)
            feed = [choice]
        return guesses, qs, fed


class _Lookup:
    """Prompt lookup over token ids."""

    def __init__(self, ngram: int, vocab: int):
        self.ngram, self.vocab = ngram, vocab

    def start(self, ids: list[int]) -> None:
        pass

    def propose(self, ids: list[int], k: int, settings: Sampling) -> tuple[list[int], list[torch.Tensor], int]:
        tail = ids[-self.ngram:]
        for start in range(len(ids) - self.ngram):  # the earliest match with something after it
            if ids[start:start + self.ngram] == tail:
                guesses = ids[start + self.ngram: start + self.ngram + k]
                return guesses, [torch.nn.functional.one_hot(torch.tensor(g), self.vocab).double()
                                 for g in guesses], 0
        return [], [], 0


def speculate_real(real: RealModel, ids: list[int] | tuple[int, ...], new_tokens: int, k: int,
                   draft: str = "prompt lookup", *, ngram: int = 2, layers: int = 2,
                   settings: Sampling = GREEDY, draft_model: RealModel | None = None) -> RealSpecRun:
    """``new_tokens`` tokens speculatively (k guesses per round) and plainly, from the same prompt."""
    ids = _checked(real, list(ids), new_tokens, k, draft, settings)
    helper, label = _draft_helper(real, draft, ngram, layers, settings, draft_model)
    plain_seconds, (plain_ids, plain_logits) = _decode_plainly(real, ids, new_tokens, settings)
    target = CachedDecoder(real)
    generator = torch.Generator().manual_seed(settings.seed)
    prefill_seconds, first = timed(lambda: target.prefill(ids).float().cpu(), real.device)
    helper.start(ids)
    word = sample(first, settings, generator).index
    out, logits, rounds, seconds = [word], [first], [], prefill_seconds
    while len(out) < new_tokens:
        budget = min(k, new_tokens - len(out) - 1)
        draft_s, (guesses, qs, draft_fed) = timed(
            lambda: helper.propose(target.ids + [word], budget, settings) if budget else ([], [], 0), real.device)

        def verify():
            before = len(target.ids)
            rows = _extend(target, [word] + guesses)  # (k + 1, vocab): one pass
            verdict = judge(list(rows), guesses, qs, settings, generator)
            verified = len(target.ids)
            if verified > before + 1 + verdict.accepted:  # crop the rejected guesses from every layer
                target.rewind(verified - (before + 1 + verdict.accepted))
            return before, rows[: verdict.accepted + 1], verdict, verified

        target_s, (before, rows, verdict, verified) = timed(verify, real.device)
        seconds += draft_s + target_s
        rounds.append(Round(len(rounds), before, piece(real, word), tuple(piece(real, g) for g in guesses),
                            verdict.p_guess, tuple(float(q[g]) for q, g in zip(qs, guesses)), verdict.draws,
                            verdict.accepted, piece(real, verdict.new), verdict.bonus, verified, len(target.ids),
                            WorkCounts(queries=1 + len(guesses)), WorkCounts(queries=draft_fed), target_s, draft_s))
        out += guesses[: verdict.accepted] + [verdict.new]
        logits += list(rows)
        word = verdict.new
    diff = _largest_diff_while_agreeing(out, logits, plain_ids, plain_logits)
    return RealSpecRun(label, k, tuple(piece(real, i) for i in ids), tuple(rounds), tuple(out),
                       tuple(piece(real, i) for i in out), tuple(plain_ids), tuple(piece(real, i) for i in plain_ids),
                       diff, seconds, plain_seconds, greedy(settings))


def _checked(real: RealModel, ids: list[int], new_tokens: int, k: int, draft: str, settings: Sampling) -> list[int]:
    """The prompt's ids, once the settings, the draft and the lengths are known to be allowed."""
    check_sampling(settings)
    if draft not in REAL_DRAFTS:
        raise RealModelError(f"the draft is one of {', '.join(REAL_DRAFTS)}")
    if not 1 <= new_tokens <= MAX_REAL_TOKENS or not 1 <= k <= MAX_REAL_K:
        raise RealModelError(f"make 1 to {MAX_REAL_TOKENS} tokens with 1 to {MAX_REAL_K} guesses per round")
    if len(ids) + new_tokens + k > real.shape.max_positions:
        raise RealModelError(f"the prompt and {new_tokens} new tokens do not fit this model's "
                             f"{real.shape.max_positions} positions")
    return ids


def _draft_helper(real: RealModel, draft: str, ngram: int, layers: int, settings: Sampling,
                  draft_model: RealModel | None):
    """The draft that guesses, and its name in words."""
    if draft == "prompt lookup":
        return _Lookup(ngram, real.shape.vocab), f"prompt lookup ({ngram}-gram)"
    if draft == "another model" and (draft_model is None
                                     or draft_model.tokenizer.get_vocab() != real.tokenizer.get_vocab()):
        raise RealModelError("another model drafts only with the same tokenizer and vocabulary")
    small = early_exit_model(real, layers) if draft == "early exit" else draft_model
    return _ModelDraft(small, settings.seed + 1), small.name


def _decode_plainly(real: RealModel, ids: list[int], new_tokens: int,
                    settings: Sampling) -> tuple[float, tuple[list[int], list[torch.Tensor]]]:
    """Plain cached decoding of the same prompt with the same seed, timed: (seconds, (ids, logits))."""
    plain = CachedDecoder(real)
    plain_gen = torch.Generator().manual_seed(settings.seed)

    def decode() -> tuple[list[int], list[torch.Tensor]]:
        logits = [plain.prefill(ids).float().cpu()]
        chosen = [sample(logits[0], settings, plain_gen).index]
        for _ in range(new_tokens - 1):
            logits.append(plain.decode_step(chosen[-1]).float().cpu())
            chosen.append(sample(logits[-1], settings, plain_gen).index)
        return chosen, logits

    return timed(decode, real.device)


def _largest_diff_while_agreeing(out: list[int], logits: list[torch.Tensor], plain_ids: list[int],
                                 plain_logits: list[torch.Tensor]) -> float:
    """The largest |logit difference| against plain decoding up to the first token the two chose differently."""
    agree = 0
    while agree < min(len(out), len(plain_ids)) and out[agree] == plain_ids[agree]:
        agree += 1
    return max(float((a - b).abs().max()) for a, b in zip(logits[: agree + 1], plain_logits[: agree + 1]))
