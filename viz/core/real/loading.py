"""A real trained model loaded for kvlab: the shipped GPT-2 and Llama, or a local Hugging Face
causal-LM directory, with its tokenizer and the sizes that decide its KV cache.

Always with ``local_files_only=True`` (nothing is downloaded), safetensors weights only (a pickle could
run code), no remote code, float32, and eager attention so the attention weights can be returned.
Prompts are encoded and sampling settings checked here, before anything runs. Running the model
(prefill, decode, the cache) is :mod:`viz.core.real.model`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from ..device import pick_device
from ..scale.model_config import SLIDING_KINDS, ConfigError, layer_kinds, tokens_kept
from ..text import brief
from ..engine.scenario import MAX_TEMPERATURE, STRATEGIES, Sampling
from .folder import FolderError, check_folder, display_name, scrub

SHIPPED_DIR = Path(__file__).resolve().parent / "weights"  # the GPT-2 model
LLAMA_DIR = Path(__file__).resolve().parent / "weights-llama"  # the Llama model (GQA), same tokenizer
SHIPPED_NAME = "kvlab-pydoc (shipped)"
LLAMA_NAME = "kvlab-pydoc-llama (shipped)"
SHIPPED_MODELS = {"gpt2": (SHIPPED_DIR, SHIPPED_NAME), "llama": (LLAMA_DIR, LLAMA_NAME)}
MAX_PROMPT_CHARS = 4_000
MAX_SEQ_LEN = 512  # prompt + generated tokens, whatever longer context the model allows
VISIBLE = {" ": "␣", "\n": "↵", "\t": "⇥", "\r": "␍"}


class RealModelError(ValueError):
    """Bad input for the real model (a path, a prompt, a setting): one line a person can act on."""


@dataclass(frozen=True)
class ModelShape:
    """The sizes that decide what the KV cache holds, read from the model's configuration."""

    layers: int  # transformer blocks, one K and one V tensor in the cache each
    heads: int  # query heads per layer (one attention map each)
    kv_heads: int  # key/value heads per layer: fewer than `heads` with grouped-query attention
    head_dim: int  # length of one head's key and value vectors
    vocab: int  # rows of the output layer
    max_positions: int  # longest sequence this model accepts here (capped at MAX_SEQ_LEN)
    parameters: int
    layer_kinds: tuple[str, ...] = ()  # per layer, as the config says (full_attention, sliding_attention)
    window: int = 0  # tokens a sliding layer keeps (0: none)

    @property
    def group(self) -> int:
        """Query heads sharing one K/V head (1 without grouped-query attention)."""
        return self.heads // self.kv_heads

    @property
    def sliding_layers(self) -> int:
        return sum(kind in SLIDING_KINDS for kind in self.layer_kinds)

    def _kept(self, seq: int) -> int:
        kinds = self.layer_kinds or ("full_attention",) * self.layers
        return sum(tokens_kept(kind, seq, self.window) for kind in kinds)

    def cache_bytes(self, seq: int, element_size: int, batch: int = 1) -> int:
        """The formula: 2 (K and V) · layers · kv_heads · head_dim · seq · bytes per number, each
        sliding layer counting at most its window."""
        return 2 * self.kv_heads * self.head_dim * self._kept(seq) * element_size * batch

    def room(self, prompt_len: int) -> int:
        """Tokens that can follow a prompt of ``prompt_len`` tokens before the context is full."""
        return self.max_positions - prompt_len

    def mha_bytes(self, seq: int, element_size: int) -> int:
        """The same cache with one K/V head per query head (no grouping)."""
        return self.cache_bytes(seq, element_size) * self.group

    def formula(self, seq: int, element_size: int) -> str:
        text = (f"2 · {self.layers} layers · {self.kv_heads} kv heads · {self.head_dim} dims · "
                f"{seq} tokens · {element_size} bytes")
        if self.sliding_layers:
            text += f", the {self.sliding_layers} sliding layers keeping at most {self.window} tokens"
        return text


@dataclass(frozen=True)
class RealModel:
    """A loaded model with its tokenizer. The weights are read-only and may be shared."""

    model: torch.nn.Module  # a transformers causal LM in eval mode
    tokenizer: object  # the matching transformers tokenizer
    name: str
    path: Path
    shape: ModelShape
    device: torch.device

    @property
    def shipped(self) -> bool:
        return any(self.path == folder for folder, _ in SHIPPED_MODELS.values())


@dataclass(frozen=True)
class Prompt:
    """A prompt as the model sees it: token ids and each token's text."""

    ids: tuple[int, ...]
    pieces: tuple[str, ...]  # each token decoded alone, spaces and newlines made visible

    def __len__(self) -> int:
        return len(self.ids)


# -- loading ----------------------------------------------------------------------------------
def load_model(path: str | Path | None = None, device: str | torch.device | None = None) -> RealModel:
    """The shipped model (``path`` None or empty) or the causal LM in a local directory.

    Raises :class:`RealModelError` with one line for a bad path or an unloadable model.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = _model_dir(path)
    dev = pick_device(device)
    kwargs = {"local_files_only": True, "trust_remote_code": False}
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, use_safetensors=True,
                                                     attn_implementation="eager", **kwargs)
    except (OSError, ValueError, KeyError, TypeError, ImportError, RuntimeError) as err:
        raise RealModelError(f"could not load a causal language model from '{display_name(str(path))}': "
                             f"{scrub(brief(err), folder, str(path))}") from None
    model = model.to(dev).eval().requires_grad_(False)
    name = next((label for shipped, label in SHIPPED_MODELS.values() if folder == shipped),
                display_name(str(path)))
    return RealModel(model, tokenizer, name, folder, _shape(model), dev)


def _model_dir(path: str | Path | None) -> Path:
    """The shipped folder, or the named one once viz.core.real.folder has checked everything in it."""
    if path is None or not str(path).strip():
        return SHIPPED_DIR
    try:
        return check_folder(path)
    except FolderError as err:
        raise RealModelError(str(err)) from None


def _shape(model: torch.nn.Module) -> ModelShape:
    config = model.config.get_text_config(decoder=True)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    positions = getattr(config, "max_position_embeddings", None) or MAX_SEQ_LEN
    try:
        kinds = tuple(layer_kinds(config))
    except (ConfigError, ValueError, TypeError) as err:
        raise RealModelError(f"cannot tell which layers use a sliding window: {brief(err)}") from None
    window = getattr(config, "sliding_window", None) or getattr(config, "attention_chunk_size", None) or 0
    return ModelShape(layers=config.num_hidden_layers, heads=heads, kv_heads=kv_heads,
                      head_dim=head_dim, vocab=model.get_output_embeddings().weight.shape[0],
                      max_positions=min(positions, MAX_SEQ_LEN),
                      parameters=sum(p.numel() for p in model.parameters()), layer_kinds=kinds,
                      window=int(window))


# -- tokens -----------------------------------------------------------------------------------
def visible(text: str) -> str:
    """A token's text with spaces, newlines and tabs shown as ␣ ↵ ⇥."""
    return "".join(VISIBLE.get(ch, ch) for ch in text)


def piece(real: RealModel, token_id: int) -> str:
    """One token decoded on its own, made visible."""
    return visible(real.tokenizer.decode([token_id]))


def encode(real: RealModel, text: str) -> Prompt:
    """The prompt's token ids and pieces; RealModelError if empty or too long for the model."""
    if not isinstance(text, str) or not text.strip():
        raise RealModelError("the prompt is empty; type a few words")
    if len(text) > MAX_PROMPT_CHARS:
        raise RealModelError(f"the prompt has {len(text):,} characters; the limit is {MAX_PROMPT_CHARS:,}")
    ids = tuple(real.tokenizer.encode(text, add_special_tokens=False))
    if not ids:
        raise RealModelError("the prompt gives no tokens")
    room = real.shape.max_positions - 1
    if len(ids) > room:
        raise RealModelError(f"the prompt is {len(ids)} tokens; this model takes at most {room} "
                             "so that at least one token can be generated")
    return Prompt(ids, tuple(piece(real, i) for i in ids))


def check_sampling(settings: Sampling) -> Sampling:
    """The settings, or RealModelError naming the first one out of range."""
    if settings.strategy not in STRATEGIES:
        raise RealModelError(f"strategy must be one of {', '.join(STRATEGIES)}")
    if not 0.0 <= settings.temperature <= MAX_TEMPERATURE:
        raise RealModelError(f"temperature must be between 0 and {MAX_TEMPERATURE:g}")
    if settings.top_k < 0:
        raise RealModelError("top-k must be 0 (keep all) or more")
    if not 0.0 < settings.top_p <= 1.0:
        raise RealModelError("top-p must be above 0 and at most 1")
    return settings


def training_report(real: RealModel) -> dict | None:
    """The ``training.json`` written by viz.tools.train next to the weights, if there is one."""
    report = real.path / "training.json"
    if not report.is_file():
        return None
    try:
        data = json.loads(report.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
