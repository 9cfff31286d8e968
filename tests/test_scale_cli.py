"""Tier 1: ``python -m viz scale`` prints one JSON object from the page's own core functions, or exits 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from viz.__main__ import main
from viz.core.scale.cache_layout import library_layout
from viz.core.scale.count import read_model, sequence_count
from viz.core.scale.model_config import CONFIG_DIR, preset

LLAMA3 = CONFIG_DIR / "llama-3-8b.json"
HYBRID = {"model_type": "qwen3_next", "num_hidden_layers": 8, "hidden_size": 256, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 1024, "intermediate_size": 256,
          "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64, "num_experts": 4,
          "num_experts_per_tok": 2, "linear_num_value_heads": 4, "linear_num_key_heads": 2,
          "linear_key_head_dim": 32, "linear_value_head_dim": 32}


def scale(capsys, *args: str) -> tuple[int, dict | None, str]:
    code = main(["scale", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def test_llama3_by_hand(capsys):
    """Llama-3-8B, a prompt of 8,192 and one decode step: 32 layers · 8 K/V heads · 128 · 2 bytes · 2 = 131,072 bytes a
    token, for 8,193 tokens; right after prefill 8,192 of them; no state. On an H100, 57 such sequences fit."""
    code, out, err = scale(capsys, str(LLAMA3), "--tokens", "8192", "--gpu", "H100")
    assert code == 0 and err == ""
    assert out["kv_bytes"] == 131_072 * 8193 and out["prefill_peak_bytes"] == 131_072 * 8192 == 1 << 30
    assert out["state_bytes"] == 0 and out["per_sequence_bytes"] == out["kv_bytes"]
    assert out["gpu"]["name"] == "H100 SXM" and out["gpu"]["weights_dtype"] == "fp16/bf16"
    assert out["gpu"]["sequences_that_fit"] == out["gpu"]["cache_budget_bytes"] // out["kv_bytes"] == 57


def test_the_command_and_transformers_agree_on_a_hybrid(capsys, tmp_path):
    """A Qwen3-Next-shaped hybrid: kv_bytes and prefill_peak_bytes are what transformers' storage holds after the
    prompt and one step, and right after the prefill; state_bytes its conv and recurrent states; all from the same
    core functions the page calls."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(HYBRID), encoding="utf-8")
    code, out, _ = scale(capsys, str(path), "--tokens", "300", "--batch", "3")
    config = read_model(path.read_text())
    layout = library_layout(config, 301)  # transformers: a prefill of 300, then one decode step
    assert out["state_bytes"] == layout.state_bytes > 0
    assert out["kv_bytes"] == layout.storage_bytes - layout.state_bytes
    assert out["prefill_peak_bytes"] == layout.prefill_bytes
    assert out["per_sequence_bytes"] == out["kv_bytes"] + out["state_bytes"] and out["batch_bytes"] == 3 * out[
        "per_sequence_bytes"]
    assert out == {**out, **{k: v for k, v in vars(sequence_count(config, 300)).items() if k.endswith("_bytes")}}
    assert (out["attention_layers"], out["state_layers"]) == (2, 6)


@pytest.mark.parametrize("dtype, factor", [("fp32", 2), ("fp16", 1), ("fp8", 0.5)])
def test_the_cache_dtype_scales_the_k_v(capsys, dtype, factor):
    """--dtype fp32 doubles the 16-bit K/V, fp8 halves it."""
    _, out, _ = scale(capsys, str(LLAMA3), "--tokens", "100", "--dtype", dtype)
    assert out["kv_bytes"] == factor * 131_072 * 101 and out["cache_dtype"] == dtype


@pytest.mark.parametrize("args, words", [
    (["--tokens", "0"], "tokens must be a whole number"),
    (["--tokens", "10", "--gpu", "Voodoo"], "no GPU called 'Voodoo'"),
    (["--tokens", "10", "--dtype", "int3"], "invalid choice"),
])
def test_bad_arguments_exit_2_with_one_line(capsys, args, words):
    """A bad length, an unknown GPU or dtype: exit code 2 and one line on standard error."""
    code, _, err = scale(capsys, str(LLAMA3), *args)
    assert code == 2 and words in err and err.count("\n") == 1


@pytest.mark.parametrize("text, words", [
    ('{"model_type": "rwkv", "num_hidden_layers": 2}', "num_attention_heads"),
    ("not json", "not valid JSON"),
    ('{"model_type": "llama", "layer_types": ["full_attention", "compressed_sparse_attention"], '
     '"num_hidden_layers": 2}', "'compressed_sparse_attention'"),
])
def test_a_config_kvlab_cannot_count_exits_2_naming_why(capsys, tmp_path, text, words):
    """A config kvlab cannot count exits with code 2 and one line that says why, like trace."""
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    code, _, err = scale(capsys, str(path), "--tokens", "10")
    assert code == 2 and err.startswith("error: ") and words in err and err.count("\n") == 1


def test_standard_input_and_a_real_process():
    """The command reads standard input with -, in a process of its own, and prints nothing but the JSON."""
    done = subprocess.run([sys.executable, "-m", "viz", "scale", "-", "--tokens", "4096"], capture_output=True,
                          text=True, timeout=300, input=LLAMA3.read_text())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["kv_bytes"] == sequence_count(preset("Llama-3-8B"), 4096).kv_bytes
