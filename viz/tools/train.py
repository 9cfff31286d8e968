"""Train the small real models that ship with kvlab: ``python -m viz.tools.train [--arch llama]``.

1. **Data**: documentation that ships with Python itself, read from the running interpreter: the
   language-reference topics behind ``help()`` (``pydoc_data.topics``) and the docstrings of the
   standard library's modules (parsed with ``ast``, never imported), one document each, in a fixed
   order, joined by ``<|endoftext|>``. Every 16th document is held out for the validation loss.
   Nothing is downloaded.
2. **Tokenizer**: byte-level BPE trained on the training documents (the ``tokenizers`` library)
   for the GPT-2 model; the Llama model shares that shipped tokenizer (``weights/tokenizer.json``),
   so both models read the same token ids.
3. **Model** (:class:`TrainConfig`, ``--arch``): ``gpt2``, transformers ``GPT2LMHeadModel`` (learned
   positions, LayerNorm, GELU MLP, one K/V head per query head); or ``llama``, ``LlamaForCausalLM``
   (RoPE, RMSNorm, SwiGLU MLP, grouped-query attention: 8 query heads over 2 K/V heads, so its cache
   is a quarter of the GPT-2 model's at the same width). Trained with AdamW on random windows of the
   token stream, seeded, on a fixed number of CPU threads.
4. **Save** ``model.safetensors``, ``config.json``, ``generation_config.json``, the tokenizer files
   and ``training.json`` (command, data fingerprint, losses, times, a greedy sample) to the output
   directory, by default ``viz/core/real/weights/`` (gpt2) or ``viz/core/real/weights-llama/`` (llama).

The same command on the same Python (the documentation differs between Python versions;
``training.json`` records the data's SHA-256) and the same number of threads reproduces the
weights. It does not write the training text anywhere.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import platform
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import torch

EOT = "<|endoftext|>"
REAL_DIR = Path(__file__).resolve().parents[1] / "core" / "real"
DEFAULT_OUT = {"gpt2": REAL_DIR / "weights", "llama": REAL_DIR / "weights-llama"}
SHARED_TOKENIZER = REAL_DIR / "weights" / "tokenizer.json"  # the GPT-2 model's, reused by the Llama model
ARCHES = ("gpt2", "llama")
SAMPLE_PROMPT = 'The "return" statement'
SKIP_DIRS = {"site-packages", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip", "pydoc_data"}


@dataclass(frozen=True)
class TrainConfig:
    arch: str = "gpt2"  # "gpt2" or "llama" (see the module docstring)
    vocab_size: int = 2048  # byte-level BPE merges + 256 bytes + the end-of-text token
    n_layer: int = 4  # transformer blocks
    n_head: int = 4  # query heads per block
    n_kv_head: int = 0  # llama: K/V heads per block (0: one per query head)
    n_embd: int = 128  # model width; head_dim = n_embd / n_head
    n_inner: int = 0  # llama: SwiGLU hidden width (0: 4 · n_embd)
    block_size: int = 256  # training window = the model's context (n_positions)
    batch_size: int = 8  # windows per step
    steps: int = 1600  # optimizer steps
    lr: float = 3e-3  # peak learning rate after warm-up
    warmup: int = 100  # linear warm-up steps
    min_lr_ratio: float = 0.1  # cosine decay ends at lr · this
    weight_decay: float = 0.1  # on matrices only
    dropout: float = 0.1  # gpt2: residual and embedding dropout while training (Llama has none)
    seed: int = 0  # seeds torch and the window sampler
    threads: int = 2  # torch CPU threads: results are reproducible for a fixed count
    val_every: int = 200  # steps between validation losses
    sample_tokens: int = 40  # greedy tokens in the recorded sample


# The Llama model: the same width, depth and context as the GPT-2 one, 8 query heads of 16 over 2
# shared K/V heads (group factor 4), a SwiGLU MLP of 3 · 128 (about the GPT-2 MLP's parameters),
# trained on one thread (about ten CPU-minutes; one thread wastes no time waiting on the other).
LLAMA = TrainConfig(arch="llama", n_head=8, n_kv_head=2, n_inner=384, dropout=0.0, threads=1)
ARCH_DEFAULTS = {"gpt2": TrainConfig(), "llama": LLAMA}


@lru_cache(maxsize=1)
def corpus() -> tuple[list[str], list[str], str]:
    """(training documents, validation documents, SHA-256 of all of them), in a fixed order.
    Read once per process; callers must not modify the lists."""
    docs = pydoc_topics() + stdlib_docstrings()
    train = [doc for i, doc in enumerate(docs) if i % 16 != 15]
    val = [doc for i, doc in enumerate(docs) if i % 16 == 15]
    digest = hashlib.sha256(EOT.join(docs).encode()).hexdigest()
    return train, val, digest


def pydoc_topics() -> list[str]:
    """The language-reference topics behind ``help()``, sorted by name."""
    from pydoc_data.topics import topics

    return [topics[name] for name in sorted(topics)]


def stdlib_docstrings() -> list[str]:
    """One document per standard-library module: its docstrings (module, classes, functions) in
    source order, read with ``ast`` (nothing is imported or run). Tests and GUI code are skipped."""
    lib = Path(sysconfig.get_paths()["stdlib"])
    docs = []
    for path in sorted(lib.rglob("*.py")):
        parts = path.relative_to(lib).parts
        if any(part in SKIP_DIRS or part.startswith("test") for part in parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        found = [ast.get_docstring(node) for node in ast.walk(tree)
                 if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]
        text = "\n\n".join(doc for doc in found if doc)
        if text:
            docs.append(text)
    return docs


def train_tokenizer(docs: list[str], vocab_size: int):
    """A byte-level BPE tokenizer (tokenizers.Tokenizer) whose id 0 is the end-of-text token."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=[EOT],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(docs, trainer=trainer)
    return tokenizer


def token_stream(tokenizer, docs: list[str]) -> torch.Tensor:
    """Every document's ids followed by the end-of-text id, as one (tokens,) int64 tensor."""
    eot = tokenizer.token_to_id(EOT)
    ids: list[int] = []
    for encoding in tokenizer.encode_batch(docs):
        ids.extend(encoding.ids)
        ids.append(eot)
    return torch.tensor(ids, dtype=torch.int64)


def windows(stream: torch.Tensor, starts: torch.Tensor, block: int) -> torch.Tensor:
    """(batch, block) slices of the stream starting at ``starts``."""
    offsets = torch.arange(block)  # (block,)
    return stream[starts[:, None] + offsets[None, :]]  # (batch, block)


def shared_tokenizer():
    """The shipped GPT-2 model's tokenizer, for a model that shares its token ids."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(SHARED_TOKENIZER))


def build_model(cfg: TrainConfig, vocab_size: int, eot_id: int):
    if cfg.arch == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        config = LlamaConfig(vocab_size=vocab_size, hidden_size=cfg.n_embd, intermediate_size=cfg.n_inner or 4 * cfg.n_embd,
                             num_hidden_layers=cfg.n_layer, num_attention_heads=cfg.n_head,
                             num_key_value_heads=cfg.n_kv_head or cfg.n_head, max_position_embeddings=cfg.block_size,
                             rms_norm_eps=1e-5, tie_word_embeddings=True, attention_dropout=0.0,
                             bos_token_id=eot_id, eos_token_id=eot_id, pad_token_id=eot_id,
                             attn_implementation="sdpa")
        return LlamaForCausalLM(config)
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=vocab_size, n_positions=cfg.block_size, n_embd=cfg.n_embd,
                        n_layer=cfg.n_layer, n_head=cfg.n_head, resid_pdrop=cfg.dropout,
                        embd_pdrop=cfg.dropout, attn_pdrop=0.0, bos_token_id=eot_id,
                        eos_token_id=eot_id, pad_token_id=eot_id, attn_implementation="sdpa")
    return GPT2LMHeadModel(config)


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up, then cosine decay from lr to lr · min_lr_ratio."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


@torch.no_grad()
def evaluate(model, stream: torch.Tensor, block: int, batch_size: int) -> float:
    """Mean loss over consecutive, non-overlapping windows covering the whole stream once."""
    model.eval()
    starts = torch.arange(0, len(stream) - block + 1, block)
    losses = []
    for chunk in starts.split(batch_size):
        batch = windows(stream, chunk, block)  # (b, block)
        losses.append(float(model(input_ids=batch, labels=batch).loss) * len(chunk))
    model.train()
    return sum(losses) / len(starts)


def train(cfg: TrainConfig, out: Path, log=print) -> dict:
    """Train tokenizer and model, save them to ``out``, return the training report."""
    from transformers import PreTrainedTokenizerFast

    wall0, cpu0 = time.perf_counter(), time.process_time()
    torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if cfg.arch not in ARCHES:
        raise ValueError(f"arch must be one of {', '.join(ARCHES)}")
    train_docs, val_docs, digest = corpus()
    tokenizer = shared_tokenizer() if cfg.arch == "llama" else train_tokenizer(train_docs, cfg.vocab_size)
    train_ids, val_ids = token_stream(tokenizer, train_docs), token_stream(tokenizer, val_docs)
    eot_id = tokenizer.token_to_id(EOT)
    log(f"data: {len(train_docs)} training / {len(val_docs)} validation documents, "
        f"{len(train_ids):,} / {len(val_ids):,} tokens, vocabulary {tokenizer.get_vocab_size()}")

    model = build_model(cfg, tokenizer.get_vocab_size(), eot_id).train()
    recent, val_losses = _fit(model, cfg, train_ids, val_ids, log, wall0)

    out.mkdir(parents=True, exist_ok=True)
    model.eval()
    model.save_pretrained(out, safe_serialization=True)
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=EOT, eos_token=EOT, pad_token=EOT,
                            model_max_length=cfg.block_size).save_pretrained(out)
    report = {
        "command": reproduce_command(cfg),
        "architecture": type(model).__name__,
        "config": asdict(cfg),
        "data": {"source": "pydoc_data.topics and the standard library's docstrings, from this Python",
                 "python": platform.python_version(), "sha256": digest,
                 "train_documents": len(train_docs), "val_documents": len(val_docs),
                 "train_chars": sum(map(len, train_docs)), "val_chars": sum(map(len, val_docs)),
                 "train_tokens": len(train_ids), "val_tokens": len(val_ids)},
        "parameters": sum(p.numel() for p in model.parameters()),
        "weights_bytes": (out / "model.safetensors").stat().st_size,
        "final_train_loss": round(sum(recent) / len(recent), 4),
        "final_val_loss": round(val_losses[-1][1], 4),
        "val_losses": [[s, round(v, 4)] for s, v in val_losses],
        "wall_seconds": round(time.perf_counter() - wall0, 1),
        "cpu_seconds": round(time.process_time() - cpu0, 1),
        "torch": torch.__version__,
        "machine": platform.processor() or platform.machine(),
    }
    report["sample"] = greedy_sample(out, SAMPLE_PROMPT, cfg.sample_tokens)
    (out / "training.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return report


def _fit(model, cfg: TrainConfig, train_ids: torch.Tensor, val_ids: torch.Tensor, log,
         wall0: float) -> tuple[list[float], list[tuple[int, float]]]:
    """The training loop: AdamW (no decay on norms and biases), the learning-rate schedule, a
    validation loss every ``val_every`` steps. Returns the last 25 training losses and the validation
    losses as (step, loss)."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.95))
    sampler = torch.Generator().manual_seed(cfg.seed)
    recent: list[float] = []
    val_losses: list[tuple[int, float]] = []
    for step in range(cfg.steps):
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, step)
        starts = torch.randint(0, len(train_ids) - cfg.block_size + 1, (cfg.batch_size,), generator=sampler)
        batch = windows(train_ids, starts, cfg.block_size)  # (batch, block)
        # labels are the inputs: the model shifts them by one position internally
        loss = model(input_ids=batch, labels=batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        recent = (recent + [loss.item()])[-25:]
        if (step + 1) % cfg.val_every == 0 or step + 1 == cfg.steps:
            val_losses.append((step + 1, evaluate(model, val_ids, cfg.block_size, cfg.batch_size)))
            log(f"step {step + 1:4d}  train loss {sum(recent) / len(recent):.3f}  "
                f"val loss {val_losses[-1][1]:.3f}  {time.perf_counter() - wall0:6.0f} s")
    return recent, val_losses


def reproduce_command(cfg: TrainConfig) -> str:
    """The command that rebuilds these weights: the options that change them, when not the defaults."""
    defaults = ARCH_DEFAULTS.get(cfg.arch, TrainConfig())
    flags = ([f"--arch {cfg.arch}"] if cfg.arch != "gpt2" else []) + [
        f"--{name} {getattr(cfg, name)}" for name in ("steps", "threads", "seed")
        if getattr(cfg, name) != getattr(defaults, name)]
    rest = [name for name in asdict(cfg) if name not in ("arch", "steps", "threads", "seed")
            and getattr(cfg, name) != getattr(defaults, name)]
    return " ".join(["python -m viz.tools.train", *flags]) + (f" (and TrainConfig changes: {', '.join(rest)})"
                                                               if rest else "")


def greedy_sample(folder: Path, prompt: str, tokens: int) -> dict:
    """Reload the saved model the way the app does and continue ``prompt`` greedily."""
    from ..core.real.model import encode, generate, load_model

    real = load_model(folder, "cpu")
    new = generate(real, encode(real, prompt).ids, tokens)
    return {"prompt": prompt, "continuation": real.tokenizer.decode(new)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m viz.tools.train", description=__doc__.splitlines()[0])
    parser.add_argument("--arch", default="gpt2", help="gpt2 (default) or llama")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default: the shipped one)")
    parser.add_argument("--steps", type=int, default=None, help="optimizer steps")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--seed", type=int, default=None, help="random seed")
    args = parser.parse_args(argv)
    if args.arch not in ARCHES:
        print(f"error: --arch must be one of {', '.join(ARCHES)}", file=sys.stderr)
        return 2
    defaults = ARCH_DEFAULTS[args.arch]
    cfg = replace(defaults, **{name: getattr(args, name) for name in ("steps", "threads", "seed")
                               if getattr(args, name) is not None})
    if cfg.steps < 1 or cfg.threads < 1 or cfg.seed < 0:
        print("error: --steps and --threads must be at least 1 and --seed at least 0", file=sys.stderr)
        return 2
    report = train(cfg, args.out or DEFAULT_OUT[args.arch], log=lambda line: print(line, flush=True))
    print(json.dumps({k: report[k] for k in ("final_train_loss", "final_val_loss", "parameters",
                                             "weights_bytes", "wall_seconds", "cpu_seconds", "sample")},
                     indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
