"""The glossary: every term kvlab shows that a first-year student may not know, in one place, with a
short definition (for a hover or a legend) and a longer one (for the docs and a "what is this?").

One word per thing. These decisions hold for pages, figures, code and docs alike:

* **context** is a head's weighted sum of values at a position (the article's word). A number of
  tokens is a **context length** (or a sequence length), never a bare "context".
* The KV cache is counted in **entries**: one entry per token, holding that token's key for every
  head and its value. A block has **slots**, each holding one entry. Not "keys seen", not "tokens
  held"; the cache's size is in bytes.
* Moving a lesson on is a **step**. What one step is depends on the page, and each has its word: a
  **decode step** (one new token) on Prefill/Decode, a scheduler **iteration** on Serving (its clock
  counts **ticks**, the time an iteration takes), a **round** of speculative decoding, a **tile** of
  FlashAttention, a **prediction** (the word a decode step chooses) on Memory.
  Whatever it is, the control that moves it is labelled **Step** on every page ("Step · scheduler
  iteration", :func:`viz.core.text.step_label`), and its help says what one step is there.
* **Kept** is said only where something filtered (top-k, top-p, an eviction window, a verifier);
  greedy decoding keeps nothing in particular, it chooses.

The module holds data only (no torch): :data:`GLOSSARY` in reading order, :func:`lookup` by a term
or one of its other spellings, :func:`hover` for a one-line definition, :func:`terms_in` for the
terms a text uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True)
class Term:
    """One glossary entry: ``term`` as kvlab writes it, ``short`` (one line, for a hover or a
    legend), ``long`` (a few sentences) and ``also``, other spellings that mean the same term."""

    term: str
    short: str
    long: str
    also: tuple[str, ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        return (self.term, *self.also)


GLOSSARY: tuple[Term, ...] = (
    # -- the toy model --------------------------------------------------------------------------
    Term("token", "A piece of text the model reads or writes: here, a word.",
         "A token is the unit a language model reads and writes. kvlab's toy splits a prompt into words; a "
         "real model splits text into pieces of words (its tokenizer decides).", ("tokens",)),
    Term("position", "Where a token sits in the sequence, counted from 1.",
         "Tokens are numbered from 1 in the order they were read or written.", ("positions",)),
    Term("prompt", "The text a model is given before it writes anything.",
         "The prompt is read at once (prefill); every token after it is written one at a time (decode)."),
    Term("prefill", "Reading the whole prompt in one pass, every position at once.",
         "Prefill computes the queries, keys and values of every prompt token in one pass and stores the keys "
         "and values in the KV cache. It is limited by arithmetic (compute-bound).", ("prefill pass",)),
    Term("decode", "Writing one new token at a time, each from everything before it.",
         "Decode adds one token per step: the new token's query attends to every cached key, the context gives "
         "logits, and a word is chosen. It is limited by reading memory (memory-bound).",
         ("decode step", "decoding")),
    Term("step", "One move of a lesson: a decode step, an iteration, a round or a tile (the page says which).",
         "On Prefill and Decode a step is a decode step (one new token). Serving steps through scheduler "
         "iterations, speculative rounds and FlashAttention tiles; Memory through predictions.", ("steps",)),
    Term("prediction", "The word a decode step chooses; prediction 0 comes right after prefill.",
         "Prediction k is the word chosen at decode step k, from the context at the last position.",
         ("predictions",)),
    Term("head", "One attention pattern: which earlier tokens a position looks at.",
         "An attention head scores every (query, key) pair and mixes the values by those scores. kvlab's toy "
         "heads follow written rules; a real model learns its heads.", ("heads", "attention head")),
    Term("rule", "The toy head's condition for attending: true where a key should count.",
         "A boolean expression over the query q, the key k and n (e.g. k.pos % 2 == 0). Where it holds the "
         "score is +√d_k, elsewhere −√d_k.", ("rules",)),
    Term("query", "What the current position asks for (Q); one row of an attention matrix.",
         "Each position's query is compared with every key it may see; in a matrix the rows are queries.",
         ("queries", "Q")),
    Term("query in focus", "The query row a step is about, outlined in orange: the newest token's on Decode, the "
         "step's position on Prefill.", "Decode's step adds a token, whose query is the newest; Prefill's step moves "
         "along the prompt, every query computed at once. Either way the orange outline is the row the step is about.",
         ("newest query",)),
    Term("key", "What a position offers to be found by (K); one column of an attention matrix.",
         "Each token's key is compared with the queries that may see it; in a matrix the columns are keys.",
         ("keys", "K")),
    Term("value", "What a position passes on when attended to (V); here one number per token.",
         "The context is the values mixed by the attention weights. The toy gives each token one number.",
         ("values", "V")),
    Term("d_k", "The length of each key and query vector.",
         "Queries and keys are vectors of d_k numbers; their dot product grows with d_k, which is why scores "
         "are divided by √d_k."),
    Term("√d_k", "The square root of d_k; scores are divided by it so softmax stays soft.",
         "Dividing Q·Kᵀ by √d_k keeps the scores' spread the same whatever d_k is. In the toy a matching key "
         "scores +√d_k and any other −√d_k.", ("sqrt(d_k)",)),
    Term("score", "How well a key matches a query: Q·Kᵀ/√d_k.",
         "The dot product of a query and a key, scaled by √d_k, before the softmax.", ("scores",)),
    Term("causal mask", "Keys after the query are hidden (−∞) so a token never sees the future.",
         "Before the softmax, every key later than the query gets −∞, so its weight is exactly 0.",
         ("masked", "mask")),
    Term("softmax", "Turns scores into weights that are positive and add up to 1.",
         "softmax(s)ᵢ = exp(sᵢ) / Σⱼ exp(sⱼ): the largest scores get most of the weight."),
    Term("attention weight", "The share of a key's value a query takes; a row adds up to 1.",
         "The softmax of a query's scores over the keys it may see.", ("weight", "weights", "attention weights")),
    Term("context", "A head's weighted sum of values at one position: Σ weight · value.",
         "The context is what attention hands on: each value times its weight, summed. A number of tokens is "
         "a context length, never a context.", ("contexts",)),
    Term("context length", "How many tokens a sequence holds (prompt and generated so far).",
         "The number of tokens a step attends over; the cache holds one entry per token of it.",
         ("sequence length",)),
    Term("logit", "A word's raw score before the softmax turns scores into probabilities.",
         "The last position's contexts (one per head) times W_vocab give one logit per vocabulary word.",
         ("logits",)),
    Term("W_vocab", "The table that turns the heads' contexts into one logit per word.",
         "A heads × words matrix of weights: logits = contexts @ W_vocab."),
    Term("greedy decoding", "Always choosing the most likely word; the same prompt gives the same words.",
         "Temperature 0: no randomness, so a toy with a few words often repeats itself.", ("greedy",)),
    Term("temperature", "Divides the logits before the softmax: low is sure, high is adventurous.",
         "Temperature 0 means greedy; 1 leaves the probabilities as they are."),
    Term("top-k", "Keep only the k most likely words before drawing one.",
         "The other words are filtered out and the rest renormalised."),
    Term("top-p", "Keep the fewest most likely words whose probabilities reach p.",
         "Also called nucleus sampling; the rest are filtered out and the kept ones renormalised."),
    # -- the cache ------------------------------------------------------------------------------
    Term("KV cache", "The keys and values already computed, kept so decode never computes them again.",
         "Each token's key (per head) and value are written once, as one entry, and read by every later "
         "query. Decode then costs one new entry per step instead of encoding every key again.",
         ("cache", "KV-cache")),
    Term("entry", "One token's cached key (for every head) and value; the cache is counted in entries.",
         "A cache of n entries holds the keys and values of n tokens.", ("entries", "cache entry")),
    Term("recompute", "No cache: every step runs the whole attention again.",
         "Every key and value is encoded again at every step, so the work grows with n² over a sequence.",
         ("recomputation", "no cache")),
    Term("re-encode", "No cache: every key and value is encoded again, only new tokens are queried.",
         "Between recompute and the KV cache: the keys are fresh, the queries are only the new ones.",
         ("reencode",)),
    Term("n", "The sequence length at the moment a key is encoded.",
         "A rule that reads n gives a cached key the length it had when it was cached."),
    Term("q.pos", "The position of the query reading a key: a rule that reads it instead of n never changes "
         "a cached key.", "A rule's q.pos is known when a key is read, not when it is written, so a cached key "
         "holds for every later query: Fix turns each rule's n into q.pos (k.pos is the key's own position)."),
    Term("stale key", "A cached key that encoding again would give differently: the cache is wrong there.",
         "A head whose rule reads n makes keys that change as the sequence grows; the cache keeps the old "
         "ones. Real models' keys never change, so their caches never go stale.", ("stale",)),
    Term("cache-safe", "A head whose keys never change once written, so caching them is exact.",
         "A rule that reads only the key and the query (never n) is cache-safe, e.g. k.pos == q.pos.",
         ("cacheable",)),
    # -- serving ----------------------------------------------------------------------------------
    Term("block", "A fixed number of cache slots, the unit a server hands out.",
         "The cache of many requests is cut into blocks of a few slots from one shared pool, like pages of "
         "memory.", ("blocks", "physical block")),
    Term("slot", "A place in a block for one entry.", "A block of size 4 has 4 slots.", ("slots",)),
    Term("block table", "A sequence's list of the blocks that hold its entries, in order.",
         "Logical block i of a sequence lives in the physical block its table names.", ("block tables",)),
    Term("pool", "All the blocks a server has for caches.", "Blocks are handed out from the pool and given back."),
    Term("reference count", "How many sequences hold a block (ref); more than 1 means shared.",
         "A shared block is freed only when its last holder lets go.", ("ref",)),
    Term("copy on write", "A shared block is copied before one holder writes into it.",
         "So the other holders keep their entries as they were.", ("copied on write",)),
    Term("prefix caching", "Reusing the cached blocks of a prompt start another request already computed.",
         "Only full blocks are shared, named by their tokens and everything before them.", ("prefix",)),
    Term("iteration", "One round of the scheduler: each running request computes its next piece.",
         "In an iteration the scheduler decides who prefills, who decodes one token and who waits.",
         ("iterations", "scheduler iteration")),
    Term("tick", "Serving's unit of time: an iteration lasts some ticks, more for more work.",
         "Times on Serving (arrival, TTFT, TPOT) are in ticks, not seconds.", ("ticks",)),
    Term("continuous batching", "Requests join and leave the batch at every iteration.",
         "A new request starts as soon as a slot and its blocks are free.", ()),
    Term("static batching", "A batch starts together and ends when its longest request ends.",
         "Memory is reserved for every request's longest possible answer up front.", ()),
    Term("chunked prefill", "A long prompt is prefilled a chunk per iteration, beside the decodes.",
         "So decodes of other requests are not stalled behind one long prompt.", ("chunk",)),
    Term("preemption", "Taking a running request's blocks away when the pool runs dry.",
         "Its entries are either recomputed later or swapped out and back.", ("preempted", "swapped out")),
    Term("TTFT", "Time to first token: from a request's arrival until its first new token.",
         "Mostly waiting and prefill.", ("time to first token",)),
    Term("TPOT", "Time per output token: the average gap between a request's new tokens.",
         "Mostly decode, and how many other requests share each iteration.", ("time per output token",)),
    Term("speculative decoding", "A cheap draft guesses a few words; the target checks them all in one pass.",
         "Guesses the target agrees with are kept; at the first rejection the target's own word is used.",
         ("draft", "target", "round", "rounds", "guess", "guesses")),
    Term("FlashAttention", "Attention computed tile by tile in fast memory, never writing the n × n scores.",
         "The online softmax keeps a running maximum and sum per query, so the scores never leave fast memory.",
         ("tile", "tiles", "online softmax")),
    Term("eviction", "Dropping entries from the cache to keep it small.",
         "A sliding window keeps the newest entries; sinks keep the first few too.", ("evicted",)),
    Term("sink", "An early token kept in an evicting cache because attention leans on it.",
         "Real models put much weight on the first tokens; dropping them hurts more than dropping others.",
         ("sinks", "attention sink")),
    Term("quantisation", "Storing numbers in fewer bits (int8, int4) with a scale.",
         "A quantised cache takes less memory at the cost of small errors.", ("quantization", "KIVI")),
    # -- at scale ---------------------------------------------------------------------------------
    Term("MHA", "Multi-head attention: every query head has a key/value head of its own.",
         "The original transformer's attention: the cache holds a key and a value for every head, the most of any "
         "design; GQA and MLA shrink it.", ("multi-head attention",)),
    Term("GQA", "Grouped-query attention: several query heads share one key/value head.",
         "Fewer K/V heads mean a proportionally smaller cache.", ("grouped-query attention", "MQA")),
    Term("MLA", "Multi-head latent attention: the cache keeps one small latent per token instead of K and V.",
         "The keys and values are rebuilt from the latent when needed (DeepSeek's design).",
         ("multi-head latent attention",)),
    Term("multiply-add", "One multiplication and one addition, the unit of the engine's work counts.",
         "A multiply-add is 2 FLOPs.", ("multiply-adds",)),
    Term("FLOPs", "Floating-point operations: additions and multiplications of numbers.",
         "A GPU's speed is quoted in FLOPs per second.", ("FLOP",)),
    Term("TFLOP/s", "A trillion (10¹²) FLOPs per second: how a GPU's arithmetic speed is quoted.",
         "An H100 does about 989 TFLOP/s of dense fp16/bf16 at its peak; the roofline's height.", ("TFLOP", "TFLOPs")),
    Term("FLOPs per byte", "Work done per byte read from memory (arithmetic intensity).",
         "Low FLOPs per byte means waiting for memory; high means waiting for arithmetic.",
         ("arithmetic intensity",)),
    Term("ridge point", "The FLOPs per byte where a GPU stops waiting for memory and waits for arithmetic.",
         "Its peak FLOPs per second divided by its memory bandwidth; left of it a step is memory-bound.",
         ("ridge",)),
    Term("memory-bound", "Limited by how fast bytes arrive from memory, not by arithmetic.",
         "Decode at small batch is memory-bound.", ()),
    Term("compute-bound", "Limited by arithmetic, not by memory.", "Prefill is compute-bound.", ()),
    Term("GPU", "A graphics processor: thousands of small cores and fast memory, where models run.",
         "Its memory holds the weights, the KV cache and the activations; its bandwidth and FLOPs set the pace.",
         ("GPUs",)),
    Term("CUDA graph", "A recorded sequence of GPU work replayed as one launch, to save launch time.",
         "Serving engines reserve memory for them beside the activations' peak.", ("CUDA graphs",)),
    Term("CUDA", "NVIDIA's platform for programming its GPUs; PyTorch calls an NVIDIA GPU 'cuda'.",
         "The app runs on 'cuda' when the server has an NVIDIA GPU, else on the CPU ('mps' on an Apple GPU).", ()),
    Term("activations", "The numbers a pass computes on the way (not weights, not cache), freed after it.",
         "Their peak is reserved on the GPU beside the weights and the cache.", ("activation", "activation peak")),
    Term("bandwidth", "How many bytes per second memory delivers.", "A GPU's HBM delivers terabytes per second.", ()),
    Term("batch", "The requests a model computes together in one pass.",
         "One read of the weights serves the whole batch, which is why batching raises throughput.", ()),
)

_BY_SPELLING = {spelling.lower(): term for term in GLOSSARY for spelling in term.spellings}


def lookup(word: str) -> Term | None:
    """The term ``word`` names (any spelling, any case), or None."""
    return _BY_SPELLING.get(word.strip().lower())


def hover(word: str) -> str:
    """'term: short definition', for a hover or a help text; KeyError for a word not in the glossary."""
    term = lookup(word)
    if term is None:
        raise KeyError(f"{word!r} is not in the glossary")
    return f"{term.term}: {term.short}"


# Terms a first-year student would not know: wherever a control's label, a metric or a caption uses one,
# its hover ("help") carries the definition (:func:`defined`; tests/test_page_terms.py walks the pages).
UNFAMILIAR = frozenset({"d_k", "√d_k", "MHA", "GQA", "MLA", "TTFT", "TPOT", "tick", "ridge point", "FLOPs per byte",
                        "FLOPs", "memory-bound", "compute-bound", "bandwidth", "CUDA graph", "CUDA", "activations",
                        "multiply-add", "quantisation", "sink", "chunked prefill", "preemption", "copy on write",
                        "cache-safe", "q.pos"})


@lru_cache(maxsize=4096)
def defined(text: str, help: str = "") -> str:
    """``help`` and, after it, "term: definition" for each unfamiliar term ``text`` uses that ``help``
    does not define yet: the hover of a label, a metric or a caption (one line: Markdown help).
    Remembered per text: a page asks for the same labels on every rerun and for every visitor."""
    missing = [hover(t.term) for t in terms_in(text) if t.term in UNFAMILIAR and t.short not in help]
    return " ".join([help] * bool(help) + missing)


# (whole-word pattern, term) per spelling, longest first: "stale key" before "key"
_SPELLINGS = tuple((re.compile(rf"(?<![\w√-]){re.escape(spelling)}(?![\w-])"), term) for spelling, term in sorted(
    ((s.lower(), term) for term in GLOSSARY for s in term.spellings if len(s) > 1), key=lambda pair: -len(pair[0])))


def terms_in(text: str) -> list[Term]:
    """The glossary terms ``text`` uses (whole words, any case; the longest spelling wins, so "stale
    key" is one term; each once, in glossary order). One-letter spellings (Q, K, V, n) are left out:
    in prose they are mostly something else."""
    return list(_terms_in(text))


@lru_cache(maxsize=4096)
def _terms_in(text: str) -> tuple[Term, ...]:
    rest, found = text.lower(), set()
    for pattern, term in _SPELLINGS:
        if pattern.search(rest):
            found.add(id(term))
            rest = pattern.sub("\0", rest)  # a word is counted once, for its longest term
    return tuple(term for term in GLOSSARY if id(term) in found)
