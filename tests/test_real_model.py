"""Tier 1 for the real model: the shipped weights, its real KV cache, cache vs no cache, the rule matcher."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import pytest
import torch

from viz.tools.real_bench import bench_real_model
from viz.tools.real_bench import main as bench_main
from viz.core.real.model import (LLAMA_DIR, LLAMA_NAME, SHIPPED_DIR, CachedDecoder, DecodeSession, RealModelError,
                                 UncachedDecoder, check_sampling, compare_cache, encode, generate, load_model,
                                 measure_cache, piece, prefix_growth, snapshot)
from viz.core.real.rules_match import (RANDOM_HEADS, TOY_RULES, chance_levels, match_heads, overlap, random_heads,
                                       rule_patterns)
from viz.tools.train import LLAMA, TrainConfig, train
from viz.tools.train import main as train_main
from viz.core.rules.language import RuleError
from viz.core.engine.scenario import Head, Sampling

PROMPT = 'The "return" statement leaves the current function call'


@pytest.fixture(scope="module")
def real():
    return load_model(None, "cpu")


@pytest.fixture(scope="module")
def prompt(real):
    return encode(real, PROMPT)


def hand_made(kind: str, n: int) -> torch.Tensor:
    """A causal (n, n) attention pattern written out by hand, not by the toy engine."""
    a = torch.zeros(n, n, dtype=torch.float64)
    for i in range(n):
        if kind == "self":
            a[i, i] = 1
        elif kind == "previous":
            a[i, max(i - 1, 0)] = 1
        elif kind == "first":
            a[i, 0] = 1
        elif kind == "uniform":
            a[i, : i + 1] = 1 / (i + 1)
    return a


# -- the shipped model -------------------------------------------------------------------------
def test_shipped_files_are_small_and_complete():
    """The shipped directory holds safetensors weights ≤ 10 MB, the config, the tokenizer and the report."""
    for name in ("model.safetensors", "config.json", "tokenizer.json", "tokenizer_config.json",
                 "training.json"):
        assert (SHIPPED_DIR / name).is_file(), name
    assert (SHIPPED_DIR / "model.safetensors").stat().st_size <= 10 * 1024 * 1024
    report = json.loads((SHIPPED_DIR / "training.json").read_text())
    assert report["final_val_loss"] > 0 and report["sample"]["continuation"]
    assert report["weights_bytes"] == (SHIPPED_DIR / "model.safetensors").stat().st_size


def test_shipped_model_loads_as_gpt2_with_eager_attention(real):
    """The shipped model is a GPT-2 causal LM in eval mode with eager attention and the trained sizes."""
    config = json.loads((SHIPPED_DIR / "config.json").read_text())
    assert real.model.config.model_type == "gpt2"
    assert real.model.config._attn_implementation == "eager"
    assert not real.model.training and real.shipped
    s = real.shape
    assert (s.layers, s.heads, s.kv_heads) == (config["n_layer"], config["n_head"], config["n_head"])
    assert s.head_dim * s.heads == config["n_embd"]
    assert s.max_positions == config["n_positions"]
    assert s.vocab == config["vocab_size"] == len(real.tokenizer)


def test_pieces_spell_the_prompt(real, prompt):
    """Decoding the pieces one by one and joining them gives the prompt back; spaces show as ␣."""
    joined = "".join(real.tokenizer.decode([i]) for i in prompt.ids)
    assert joined == PROMPT
    assert any(p.startswith("␣") for p in prompt.pieces)
    assert len(prompt.pieces) == len(prompt.ids) == len(prompt)


def test_prefill_attention_is_causal_and_normalised(real, prompt):
    """Prefill returns (layers, heads, n, n) weights that sum to 1 per row and are 0 above the diagonal."""
    result = CachedDecoder(real).prefill_with_attention(prompt.ids)
    n = len(prompt)
    assert result.attentions.shape == (real.shape.layers, real.shape.heads, n, n)
    rows = torch.ones(real.shape.layers, real.shape.heads, n)
    assert torch.allclose(result.attentions.sum(-1), rows, atol=1e-5)
    assert float(result.attentions.triu(1).abs().max()) == 0.0
    assert abs(float(result.prediction.probs.sum()) - 1) < 1e-9
    top = result.prediction.top_k(5)
    assert len(top) == 5 and top[0][1] >= top[-1][1]


# -- cache vs no cache -------------------------------------------------------------------------
def test_cached_and_uncached_greedy_generation_agree_over_many_steps(real, prompt):
    """Over 100 greedy steps the cached and uncached runs choose the same tokens with logits within 1e-4."""
    result = compare_cache(real, prompt.ids, 100)
    assert result.same_tokens
    assert len(result.cached_ids) == 100 and len(result.max_abs_diff) == 100
    assert result.overall_max_abs_diff < 1e-4
    assert len(result.cached_seconds) == len(result.uncached_seconds) == 99
    assert result.seq_lens == list(range(len(prompt) + 1, len(prompt) + 100))
    assert all(s > 0 for s in result.cached_seconds + result.uncached_seconds)


def test_cached_and_uncached_sampling_agree(real, prompt):
    """With temperature sampling and the same seed both ways draw the same tokens."""
    settings = Sampling(strategy="sample", temperature=0.9, top_k=50, top_p=0.95, seed=7)
    result = compare_cache(real, prompt.ids, 40, settings)
    assert result.same_tokens and result.overall_max_abs_diff < 1e-4
    assert result.cached_ids == generate(real, prompt.ids, 40, settings, cached=False)


def test_repeated_timing_changes_nothing_but_the_clock(real, prompt):
    """Timing each step 3 times (rewinding the cache in between) gives the same tokens and logits."""
    once = compare_cache(real, prompt.ids, 12)
    thrice = compare_cache(real, prompt.ids, 12, repeats=3)
    assert thrice.cached_ids == once.cached_ids and thrice.uncached_ids == once.uncached_ids
    assert thrice.max_abs_diff == pytest.approx(once.max_abs_diff, abs=1e-6)
    with pytest.raises(RealModelError):
        compare_cache(real, prompt.ids, 12, repeats=0)


def test_greedy_generation_matches_transformers_generate(real, prompt):
    """Our stepping loop produces exactly the tokens of model.generate() with greedy decoding."""
    x = torch.tensor([prompt.ids])
    theirs = real.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=30, min_new_tokens=30,
                                 do_sample=False, pad_token_id=real.tokenizer.eos_token_id)
    assert generate(real, prompt.ids, 30) == theirs[0, len(prompt):].tolist()


# -- the real cache ----------------------------------------------------------------------------
def test_cache_shapes_and_bytes_follow_the_formula(real, prompt):
    """Each layer caches K and V of shape [1, kv_heads, seq, head_dim]; bytes add up to the formula."""
    decoder = CachedDecoder(real)
    logits = decoder.prefill(prompt.ids)
    s = real.shape
    for step in range(6):
        snap = snapshot(decoder)
        seq = len(prompt) + step
        assert snap.seq_len == seq and len(snap.layers) == s.layers
        for layer in snap.layers:
            assert layer.key_shape == layer.value_shape == (1, s.kv_heads, seq, s.head_dim)
            assert layer.nbytes == 2 * s.kv_heads * seq * s.head_dim * 4
            assert layer.key_norms.shape == (s.kv_heads, seq) and bool((layer.key_norms > 0).all())
        assert snap.element_size == 4
        assert snap.total_bytes == snap.formula_bytes == 2 * s.layers * s.kv_heads * s.head_dim * seq * 4
        assert snap.matches_formula and f"{seq} tokens" in snap.formula
        logits = decoder.decode_step(int(logits.argmax()))


def test_cache_keeps_old_keys_unchanged(real, prompt):
    """Appending a token leaves every cached key of the earlier tokens exactly as it was."""
    decoder = CachedDecoder(real)
    decoder.prefill(prompt.ids)
    before = [layer.keys.clone() for layer in decoder.cache.layers]
    decoder.decode_step(5)
    for old, layer in zip(before, decoder.cache.layers):
        assert torch.equal(layer.keys[:, :, : old.shape[2]], old)


def test_rewind_then_redo_gives_the_same_logits(real, prompt):
    """Rewinding crops every layer's cache; feeding the same token again gives the same logits."""
    decoder = CachedDecoder(real)
    decoder.prefill(prompt.ids)
    first = decoder.decode_step(7)
    decoder.decode_step(9)
    decoder.rewind(2)
    assert snapshot(decoder).seq_len == len(prompt) and decoder.ids == list(prompt.ids)
    assert torch.allclose(decoder.decode_step(7), first, atol=1e-5)
    with pytest.raises(RealModelError):
        decoder.rewind(len(decoder.ids))


def test_a_session_measures_the_cache_after_shorter_prompts_too(real, prompt):
    """A new session measures the cache after a few of the prompt's shorter prefixes, in order, each
    a fresh prefill whose storage equals the formula; the whole prompt is the history's first point."""
    session = DecodeSession(real, prompt)
    lengths = [tokens for tokens, _, _ in session.prefixes]
    assert len(lengths) >= 3 and lengths == sorted(set(lengths)) and 1 <= lengths[0] and lengths[-1] < len(prompt)
    assert all(measured == formula == measure_cache(real, prompt.ids[:tokens]).total_bytes
               for tokens, measured, formula in session.prefixes)
    assert session.history[0][0] == len(prompt) and prefix_growth(real, prompt.ids[:1]) == []


def test_session_back_undoes_a_step(real, prompt):
    """DecodeSession.back restores the cache length, the history and the prediction before the step."""
    session = DecodeSession(real, prompt)
    session.step()
    after_one = session.prediction.logits.clone()
    session.step()
    session.back()
    assert session.snapshot().seq_len == len(prompt) + 1 and len(session.history) == 2
    assert torch.allclose(session.prediction.logits, after_one, atol=1e-5)
    session.back()
    assert session.generated == []
    assert torch.equal(session.prediction.logits, session.prefill.prediction.logits)
    with pytest.raises(RealModelError, match="nothing to undo"):
        session.back()


def test_session_transcript_is_the_prompt_then_the_words_generated(real, prompt):
    """The page's one text: the prompt as typed before any step, then the prompt and each generated piece."""
    session = DecodeSession(real, prompt)
    assert session.transcript == PROMPT and session.room == real.shape.max_positions - len(prompt)
    session.step()
    session.step()
    assert session.transcript == PROMPT + real.tokenizer.decode(session.generated)
    assert session.room == real.shape.room(len(prompt) + 2)


def test_decoders_refuse_to_pass_the_context(real):
    """Decoding past the model's context raises RealModelError instead of failing inside the model."""
    limit = real.shape.max_positions
    for kind in (CachedDecoder, UncachedDecoder):
        decoder = kind(real)
        decoder.prefill([5] * (limit - 1))
        decoder.decode_step(5)
        with pytest.raises(RealModelError, match="exceed"):
            decoder.decode_step(5)
    with pytest.raises(RealModelError):
        CachedDecoder(real).prefill([5] * (limit + 1))


def test_empty_cache_snapshot_is_refused(real):
    """A snapshot before the prefill is a clear error, not an index error."""
    with pytest.raises(RealModelError, match="prefill"):
        snapshot(CachedDecoder(real))


# -- bad input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, message", [("", "empty"), ("   ", "empty"), ("x" * 5000, "characters"),
                                           ("word " * 400, "tokens")])
def test_bad_prompts_are_refused(real, text, message):
    """Empty, overlong and too-many-token prompts raise RealModelError naming the problem."""
    with pytest.raises(RealModelError, match=message):
        encode(real, text)


def test_bad_model_paths_are_refused(tmp_path):
    """A missing path, a file, a folder without config.json or without safetensors: one clear line each."""
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    no_weights = tmp_path / "no_weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text("{}")
    cases = [(tmp_path / "missing", "not a directory"), (tmp_path / "file.txt", "not a directory"),
             (tmp_path / "empty", "config.json"), (no_weights, "safetensors"), ("bad\npath", "control")]
    for path, message in cases:
        with pytest.raises(RealModelError, match=message) as err:
            load_model(path, "cpu")
        assert "\n" not in str(err.value)


def test_broken_model_directory_is_a_clear_error(tmp_path):
    """A directory whose config.json is not a causal LM raises RealModelError, not a transformers error."""
    folder = tmp_path / "broken"
    shutil.copytree(SHIPPED_DIR, folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "no-such-model"}))
    with pytest.raises(RealModelError, match="could not load"):
        load_model(folder, "cpu")


def test_any_local_model_directory_loads(tmp_path, real, prompt):
    """A copy of the model in another directory loads by path, named after it, and predicts the same."""
    folder = tmp_path / "my-model"
    shutil.copytree(SHIPPED_DIR, folder)
    other = load_model(str(folder), "cpu")
    assert other.name == "my-model" and not other.shipped
    assert generate(other, prompt.ids, 10) == generate(real, prompt.ids, 10)


def test_sampling_settings_are_checked():
    """Out-of-range sampling settings raise RealModelError; valid ones pass through."""
    assert check_sampling(Sampling()) == Sampling()
    for bad in (Sampling(temperature=-1), Sampling(top_p=0), Sampling(top_k=-1), Sampling(strategy="beam")):
        with pytest.raises(RealModelError):
            check_sampling(bad)


# -- heads that look like rules -----------------------------------------------------------------
@pytest.mark.parametrize("kind, rule", [("self", "self"), ("previous", "previous"),
                                        ("first", "first"), ("uniform", "all")])
def test_matcher_finds_a_head_built_to_match_a_rule(kind, rule):
    """A head whose attention is written by hand to follow a rule is matched to that rule with score ≈ 1."""
    n = 9
    attentions = torch.stack([hand_made("uniform", n), hand_made(kind, n)])[None]  # (1, 2, n, n)
    matches = match_heads(attentions, [f"t{i}" for i in range(n)])
    found = matches.head(0, 1)
    assert TOY_RULES[found.best].name == rule
    assert found.score > 1 - 1e-5
    assert all(0.0 <= s <= 1.0 for s in found.scores)
    assert sorted(found.scores)[-2] < 0.9  # and no other rule comes close


def test_matcher_scores_a_mixture_by_overlap():
    """A head split 50/50 between self and previous token scores 0.5 against each of them."""
    n = 6
    mixed = (hand_made("self", n) + hand_made("previous", n)) / 2
    scores = match_heads(mixed[None, None], ["a"] * n).head(0, 0).scores
    names = [r.name for r in TOY_RULES]
    assert abs(scores[names.index("self")] - 0.5) < 1e-5
    assert abs(scores[names.index("previous")] - 0.5) < 1e-5


def test_rule_patterns_come_from_the_toy_engine():
    """The toy's 'even positions' pattern spreads weight evenly over even keys and is causal."""
    patterns = rule_patterns(["a", "b", "c", "d", "e"])
    even = patterns[[r.name for r in TOY_RULES].index("even")]
    assert torch.allclose(even[4], torch.tensor([0, 0.5, 0, 0.5, 0], dtype=torch.float64), atol=1e-6)
    assert float(patterns.triu(1).abs().max()) == 0.0


def test_matcher_accepts_token_rules_and_refuses_bad_ones():
    """A rule reading k.token uses the real pieces; a rule outside the language raises RuleError."""
    tokens = ["x", "the", "y", "the"]
    pattern = rule_patterns(tokens, (Head("the", 'k.token == "the"'),))[0]
    assert pattern[3].tolist() == pytest.approx([0, 0.5, 0, 0.5], abs=1e-6)
    with pytest.raises(RuleError):
        rule_patterns(tokens, (Head("bad", "__import__('os')"),))
    with pytest.raises(ValueError):
        overlap(torch.ones(1, 1), rule_patterns(["a"]))


def test_shipped_model_has_rule_like_heads(real):
    """On a prose prompt some head of the trained model matches a toy rule with score ≥ 0.9."""
    prompt = encode(real, "If an expression list is present, it is evaluated, else None is substituted.")
    result = CachedDecoder(real).prefill_with_attention(prompt.ids)
    matches = match_heads(result.attentions, prompt.pieces)
    assert matches.scores.shape == (real.shape.layers, real.shape.heads, len(TOY_RULES))
    assert matches.best_head().score >= 0.9


# -- chance ------------------------------------------------------------------------------------------
def test_random_heads_set_a_chance_level_per_rule():
    """Random heads (softmax of random scores) already overlap 'all' well (above 0.6 at 12 tokens) but
    'previous' little; the chance level is their 95th percentile, per rule, the same every time."""
    tokens = tuple(f"t{i}" for i in range(12))
    chance = chance_levels(tokens)
    names = [r.name for r in TOY_RULES]
    assert chance[names.index("all")] > 0.6 > 0.3 > chance[names.index("previous")]
    scores = overlap(random_heads(12), rule_patterns(tokens))  # (RANDOM_HEADS, rules)
    assert scores.shape == (RANDOM_HEADS, len(TOY_RULES))
    assert bool(((scores <= chance).float().mean(dim=0) >= 0.94).all())
    assert torch.equal(chance, chance_levels.__wrapped__(tokens))


def test_heads_built_to_follow_a_rule_beat_chance_and_random_ones_mostly_do_not():
    """A previous-token head beats chance; of 64 other random heads (another seed) few beat it on their best rule."""
    n = 12
    previous = hand_made("previous", n)[None, None].float()  # (1, 1, n, n)
    matches = match_heads(previous, [f"t{i}" for i in range(n)])
    assert matches.heads[0].beats_chance and matches.above_chance() == matches.heads
    others = match_heads(random_heads(n, 64, seed=1)[None], [f"t{i}" for i in range(n)])
    assert len(others.above_chance()) <= 64 * 0.25
    assert all(0 <= m.chance <= 1 for m in others.heads)


# -- the Llama model ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def llama():
    return load_model(LLAMA_DIR, "cpu")


def test_llama_is_a_small_gqa_llama_sharing_the_tokenizer(llama):
    """The shipped Llama: LlamaForCausalLM with RoPE, RMSNorm and a SwiGLU MLP, 8 query heads over 2 K/V heads,
    a few MB of safetensors, and byte for byte the GPT-2 model's tokenizer."""
    config = json.loads((LLAMA_DIR / "config.json").read_text())
    assert config["model_type"] == "llama" and (config["num_attention_heads"], config["num_key_value_heads"]) == (8, 2)
    assert config["rope_parameters"]["rope_type"] == "default" and config["hidden_act"] == "silu"
    layer = llama.model.model.layers[0]
    assert type(layer.input_layernorm).__name__ == "LlamaRMSNorm" and hasattr(layer.mlp, "gate_proj")
    assert (llama.shape.heads, llama.shape.kv_heads, llama.shape.group) == (8, 2, 4)
    assert llama.name == LLAMA_NAME and llama.shipped
    assert (LLAMA_DIR / "tokenizer.json").read_bytes() == (SHIPPED_DIR / "tokenizer.json").read_bytes()
    size = (LLAMA_DIR / "model.safetensors").stat().st_size
    report = json.loads((LLAMA_DIR / "training.json").read_text())
    assert 1024**2 < size <= 10 * 1024**2 and report["weights_bytes"] == size
    assert report["command"] == "python -m viz.tools.train --arch llama" and report["architecture"] == "LlamaForCausalLM"
    assert report["data"]["sha256"] == json.loads((SHIPPED_DIR / "training.json").read_text())["data"]["sha256"]


def test_llama_cache_is_a_quarter_of_gpt2_measured(real, llama, prompt):
    """After the same prompt, the Llama's cache storage is 1,024 bytes per token and the GPT-2's 4,096: the same
    width and depth, 2 K/V heads of 16 instead of 4 of 32, so a quarter, the group factor."""
    ours, theirs = measure_cache(llama, prompt.ids), measure_cache(real, prompt.ids)
    assert ours.bytes_per_token == 2 * 4 * 2 * 16 * 4 == 1024 and theirs.bytes_per_token == 4096
    assert theirs.total_bytes == 4 * ours.total_bytes and ours.mha_bytes == 4 * ours.total_bytes
    assert all(layer.key_shape == (1, 2, len(prompt), 16) for layer in ours.layers)


def test_llama_cached_and_uncached_agree_and_match_generate(llama, prompt):
    """Over 60 greedy steps the Llama's cached and uncached runs agree, and equal model.generate()."""
    result = compare_cache(llama, prompt.ids, 60)
    assert result.same_tokens and result.overall_max_abs_diff < 1e-4
    x = torch.tensor([prompt.ids])
    theirs = llama.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=20, min_new_tokens=20,
                                  do_sample=False, pad_token_id=llama.tokenizer.eos_token_id)
    assert generate(llama, prompt.ids, 20) == theirs[0, len(prompt):].tolist()


# -- a sliding-window model ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sliding(tmp_path_factory):
    """A tiny random Mistral with an 8-token sliding window, saved as a local model folder."""
    from transformers import MistralConfig, MistralForCausalLM

    folder = tmp_path_factory.mktemp("sliding")
    torch.manual_seed(0)
    config = MistralConfig(vocab_size=2048, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, sliding_window=8, max_position_embeddings=256)
    MistralForCausalLM(config).save_pretrained(folder)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(SHIPPED_DIR / name, folder / name)
    return load_model(folder, "cpu")


def test_a_sliding_window_model_gets_sliding_cache_layers(sliding, prompt):
    """The cache is built from the config: sliding-window layers holding 7 tokens in their shapes; right after
    the 11-token prompt their storage still holds the whole prompt, after one step the 8-token window, which is
    the formula. Measured bytes are the storage, so they can differ from the formula, and say so."""
    session = DecodeSession(sliding, prompt)
    snap = session.snapshot()
    assert {layer.cache_class for layer in snap.layers} == {"DynamicSlidingWindowLayer"}
    per_token = 2 * 2 * 2 * 16 * 4  # layers · K and V · kv heads · head dim · bytes
    assert snap.held_bytes == per_token * 7 and snap.total_bytes == per_token * len(prompt)
    assert snap.formula_bytes == per_token * 8 and not snap.matches_formula
    session.step()
    snap = session.snapshot()
    assert snap.total_bytes == snap.formula_bytes == per_token * 8 and snap.seq_len == len(prompt) + 1
    assert all(layer.key_shape[2] == 7 for layer in snap.layers)


def test_a_sliding_window_model_rewinds_past_its_window(sliding, prompt):
    """Back after several steps past the window rebuilds the cache (a sliding layer keeps no older keys to crop
    back to) and gives the same prediction as before the step; cached and uncached decoding agree."""
    session = DecodeSession(sliding, prompt)
    for _ in range(3):
        session.step()
    before = session.prediction.logits.clone()
    session.step()
    session.back()
    assert torch.allclose(session.prediction.logits, before, atol=1e-5)
    assert session.snapshot().seq_len == len(prompt) + 3
    result = compare_cache(sliding, prompt.ids, 20)
    assert result.same_tokens and result.overall_max_abs_diff < 1e-4


# -- training and benchmark commands ----------------------------------------------------------
def test_training_is_deterministic_and_loadable(tmp_path):
    """Two tiny training runs with the same seed write identical weights and a loadable model."""
    cfg = replace(TrainConfig(), vocab_size=300, n_layer=1, n_head=2, n_embd=16, block_size=32,
                  batch_size=64, steps=2, warmup=1, val_every=2, sample_tokens=3)
    first = train(cfg, tmp_path / "a", log=lambda line: None)
    train(cfg, tmp_path / "b", log=lambda line: None)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert first["final_train_loss"] > 0 and len(first["data"]["sha256"]) == 64
    tiny = load_model(tmp_path / "a", "cpu")
    assert tiny.shape.layers == 1 and tiny.shape.max_positions == 32


def test_llama_training_is_deterministic_and_shares_the_tokenizer(tmp_path):
    """Two tiny Llama runs with the same seed write identical weights; both reuse the shipped tokenizer."""
    cfg = replace(LLAMA, n_layer=1, block_size=32, batch_size=4, steps=2, warmup=1, val_every=2, sample_tokens=3)
    report = train(cfg, tmp_path / "a", log=lambda line: None)
    train(cfg, tmp_path / "b", log=lambda line: None)
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
    assert (tmp_path / "a" / "tokenizer.json").read_bytes() == (SHIPPED_DIR / "tokenizer.json").read_bytes()
    assert report["architecture"] == "LlamaForCausalLM" and report["command"].startswith("python -m viz.tools.train --arch llama")
    tiny = load_model(tmp_path / "a", "cpu")
    assert (tiny.shape.heads, tiny.shape.kv_heads) == (8, 2)


def test_commands_exit_2_on_bad_input(capsys):
    """The train and bench commands answer bad arguments with exit code 2 and one line on stderr."""
    assert train_main(["--steps", "0"]) == 2
    assert bench_main(["--model", "/no/such/model"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 1 and "not a directory" in err


def test_model_choices_exit_2_on_a_bad_name(capsys):
    """An unknown --arch for the trainer or --shipped for the benchmark: exit code 2, one line each."""
    assert train_main(["--arch", "bert"]) == 2
    assert bench_main(["--shipped", "bert"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and "--arch" in lines[0] and "--shipped" in lines[1]


def test_bench_quick_reports_positive_measurements():
    """The quick benchmark returns every documented field, each a positive measurement."""
    result = bench_real_model(quick=True, device="cpu")
    assert [row["length"] for row in result["per_token"]] == [16, 64, 256]
    for row in result["per_token"]:
        assert row["cached_ms"] > 0 and row["uncached_ms"] > 0 and row["speedup"] > 0
    e = result["end_to_end"]
    assert e["prompt_tokens"] + e["new_tokens"] == 64
    assert min(e["cached_s"], e["uncached_s"], e["generate_s"]) > 0
    assert e["same_tokens"] is True
    assert set(result["goals"]) == {"ours_within_1.2x_of_generate", "cached_5x_uncached_at_256"}



def test_the_narration_says_what_each_step_fed_and_what_the_cache_holds(real, prompt):
    """Before a step it speaks of the prefill; after one, of the token picked and fed alone, the cache's
    tokens and bytes and their growth (one token's K and V in every layer), and the likeliest next token."""
    from viz.core.real.words import narrate_session

    session = DecodeSession(real, prompt)
    s = real.shape
    first = narrate_session(session)
    prefill_bytes = session.history[0][1]
    assert f"prompt's {len(prompt)} tokens" in first and f"each of the {s.layers} layers" in first
    assert f"({prefill_bytes:,} bytes in all)" in first and "Most likely next: '" in first
    top_id, top_p = session.prediction.top_k(1)[0]
    assert first.endswith(f"'{piece(real, top_id)}' (p = {top_p:.2f}).")
    session.step()
    said = narrate_session(session)
    grown = 2 * s.layers * s.kv_heads * s.head_dim * session.snapshot().element_size  # K and V, one token
    assert said.startswith(f"Step 1: the model picked '{piece(real, session.generated[0])}' and fed only that")
    assert f"covers {len(prompt) + 1} tokens in {prefill_bytes + grown:,} bytes (+{grown:,} since" in said


def test_the_decode_tabs_cache_picture_reads_on_a_phone(real, prompt):
    """Real model's Decode tab, its lesson figure at a phone's 358 px: the title on one line across the
    phone (the legend says which row is new), the K/V heads numbered under the axis title that names
    them (four "head n" labels ran together), and the hover still says "K/V head"."""
    from viz.figures import real as figs
    from viz.figures.base import PHONE_PX, title_chars
    decoder = CachedDecoder(real)
    decoder.prefill(prompt.ids)
    snap = snapshot(decoder)
    fig = figs.key_norms_figure(snap, 0, list(prompt.pieces), height=figs.CACHE_PX)
    assert len(fig.layout.meta["title"]) <= title_chars(PHONE_PX)[1], fig.layout.meta["title"]
    assert "length ‖k‖" in fig.layout.meta["title"]  # the symbol said in words (a first-year reads ‖k‖ as noise)
    assert list(fig.data[0].x) == [str(h) for h in range(real.shape.kv_heads)]
    assert fig.layout.xaxis.title.text == "K/V head (columns)" and "K/V head %{x}" in fig.data[0].hovertemplate
    assert "new entry" in [trace.name for trace in fig.data]
    # its colour bar's title level above the bar, as the rules scores' (turned on end, '‖k‖' was a smudge)
    assert fig.data[0].colorbar.title.text == "‖k‖" and fig.data[0].colorbar.title.side == "top"
    # right after the prefill no row is the one just appended: no outline, no "new entry" in the legend
    prefilled = figs.key_norms_figure(snap, 0, list(prompt.pieces), height=figs.CACHE_PX, appended=False)
    assert "new entry" not in [trace.name for trace in prefilled.data] and not prefilled.layout.shapes


def test_the_toy_rules_go_by_the_names_the_toy_gives_them():
    """A rule Real model compares heads with is named as the toy's presets name the same rule (its
    'everything' was the toy's 'all'), so a head 'like all' is the head the toy calls 'all'."""
    from viz.core.engine.presets import load_preset, preset_names
    toy = {head.rule: head.name for name in preset_names() for head in load_preset(name).heads}
    named = [(rule.name, toy[rule.rule]) for rule in TOY_RULES if rule.rule in toy]
    assert {"True", "k.pos == 1", "k.pos % 2 == 0"} <= {rule.rule for rule in TOY_RULES if rule.rule in toy}
    assert all(ours == theirs for ours, theirs in named), named
