"""The model folder a person names on the Real model page, checked before anything is loaded.

:func:`check_folder` accepts a folder only if everything transformers would read from it is plain
data inside it: ``config.json`` with sizes that make sense, ``model.safetensors`` (or a
``model.safetensors.index.json`` whose every entry is a ``.safetensors`` file in the folder), each
weights file whole (its header read and its tensors' byte ranges checked against the file's
size, so an empty or truncated file is caught here), tokenizer files, and, if present, a
``training.json`` of the kind kvlab writes. Nothing is imported, unpickled or run; a symbolic
link that leads out of the folder counts as outside.

Every refusal is a :class:`FolderError` of one line that quotes only what the person typed (clipped),
never the resolved path on the server; :func:`scrub` does the same for messages from transformers. A path
that is missing, not a directory or not readable gets one and the same sentence, so a refusal does not
tell whether something exists there.

Naming folders is off unless the person running kvlab turns it on (:func:`folders_allowed`:
``KVLAB_MODEL_FOLDERS=1``; ``KVLAB_PUBLIC=1`` keeps it off whatever else is set): a server started
as the README says offers visitors the shipped models only.

What this module does not do: load the model (viz.core.real.model).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from pathlib import Path, PurePath

from ..scale.model_config import MAX_CONFIG_BYTES, SIZE_CAPS, ConfigError, read_config
from ..text import first_unusable, shown

MAX_PATH_CHARS = 1024  # a typed path longer than this is refused before touching the disk
MAX_MODEL_BYTES = 2 * 1024**3  # safetensors on disk; larger models are refused, not loaded
MAX_JSON_FILE_BYTES = 1_000_000  # the index, training.json, tokenizer_config.json
MAX_HEADER_BYTES = 100_000_000  # a safetensors header (the format's own limit)
INDEX = "model.safetensors.index.json"
WEIGHTS = "model.safetensors"
TOKENIZER_FILES = (("tokenizer.json",), ("vocab.json", "merges.txt"), ("tokenizer.model",), ("vocab.txt",))
DTYPE_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2,
               "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
FOLDERS_SETTING = "KVLAB_MODEL_FOLDERS"  # the operator's switch for loading a model from a local folder
PUBLIC_SETTING = "KVLAB_PUBLIC"  # a public deployment: never, whatever FOLDERS_SETTING says
_ON = ("1", "true", "yes")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?[/\\][^\s'\"`,;)]+")


class FolderError(ValueError):
    """A model folder that is refused; the message is one line and quotes only what was typed."""


def display_name(typed: str) -> str:
    """The folder's name as the person typed it (its last part), for headings and messages."""
    text = typed.strip().rstrip("/\\")
    return shown(PurePath(text).name or text or typed.strip(), 60)


def folders_allowed() -> bool:
    """Whether visitors may name a model folder on this server: only where its operator said so."""
    def on(name: str) -> bool:
        return os.environ.get(name, "").strip().lower() in _ON
    return on(FOLDERS_SETTING) and not on(PUBLIC_SETTING)


def check_folder(typed: str | Path) -> Path:
    """The resolved folder, if it holds a model kvlab may load; else :class:`FolderError`."""
    text = str(typed).strip()
    quoted = f"'{shown(text, 60)}'"
    if len(text) > MAX_PATH_CHARS:
        raise FolderError(f"the model path is too long ({len(text):,} characters; the limit is "
                          f"{MAX_PATH_CHARS:,})")
    if first_unusable(text) is not None:
        raise FolderError("the model path contains control characters or characters that are not text")
    try:
        folder = Path(text).expanduser()
        found = folder.is_dir()
        folder = folder.resolve(strict=True) if found else folder
    except (OSError, RuntimeError, ValueError):
        found = False
    if not found:  # missing, a file, unreadable: one sentence, so nothing is learnt about the disk
        raise FolderError(f"{quoted} is not a directory this server can read")
    try:
        _check_contents(folder)
    except FolderError as err:
        raise FolderError(f"{quoted} {err}") from None
    except (OSError, ValueError, RecursionError, MemoryError):
        raise FolderError(f"{quoted} could not be read as a model folder") from None
    return folder


def scrub(message: str, folder: Path, typed: str) -> str:
    """A message from a library with the resolved folder replaced by what was typed and any other
    absolute path left out."""
    message = message.replace(str(folder), shown(str(typed).strip(), 60))
    return _ABSOLUTE_PATH.sub("…", message)


# -- what is inside ---------------------------------------------------------------------------
def _check_contents(folder: Path) -> None:
    config = _inside(folder, "config.json", required=True)
    weights = _weight_files(folder)
    total = sum(_check_safetensors(folder, name) for name in weights)
    if total > MAX_MODEL_BYTES:
        raise FolderError(f"holds {total / 1024**3:.1f} GiB of weights; the limit here is "
                          f"{MAX_MODEL_BYTES / 1024**3:.0f} GiB")
    _check_config(config)
    if not any(all(_inside(folder, name, required=False) for name in group) for group in TOKENIZER_FILES):
        raise FolderError("has no tokenizer files (tokenizer.json, or vocab.json with merges.txt, "
                          "tokenizer.model or vocab.txt)")
    tokenizer_config = _json_file(folder, "tokenizer_config.json", required=False)
    if tokenizer_config is not None and not isinstance(tokenizer_config, dict):
        raise FolderError("has a tokenizer_config.json that is not a JSON object")
    report = _json_file(folder, "training.json", required=False)
    if report is not None:
        _check_training_report(report)


def _inside(folder: Path, name: str, *, required: bool) -> Path | None:
    """``folder / name`` if it is a regular file that stays inside the folder; None if absent."""
    path = folder / name
    if not path.exists() and not path.is_symlink():
        if required:
            raise FolderError(f"has no {name}")
        return None
    real = path.resolve()
    if folder not in real.parents:
        raise FolderError(f"has a {shown(name, 40)} that leads outside the folder")
    if not real.is_file():
        raise FolderError(f"has a {shown(name, 40)} that is not a regular file")
    return real


def _json_file(folder: Path, name: str, *, required: bool):
    path = _inside(folder, name, required=required)
    if path is None:
        return None
    if path.stat().st_size > MAX_JSON_FILE_BYTES:
        raise FolderError(f"has a {name} larger than {MAX_JSON_FILE_BYTES:,} bytes")
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError):
        raise FolderError(f"has a {name} that is not valid JSON") from None


def _check_config(path: Path) -> None:
    """config.json read as the At scale page reads one (size caps on every field, viz.core.scale.model_config),
    then the sizes the loader divides by: at least 1, heads that split the width and the K/V heads."""
    with open(path, "rb") as handle:
        data = handle.read(MAX_CONFIG_BYTES + 1)
    try:
        config = read_config(data)
    except ConfigError as err:
        raise FolderError(f"has a config.json kvlab cannot use: {err}") from None
    for part in (config, config.get("text_config")):
        if not isinstance(part, dict):
            continue
        for _, names in SIZE_CAPS.values():
            for name in names:
                if part.get(name) == 0:
                    raise FolderError(f"has a config.json whose {name} is 0; it must be at least 1")
        heads = part.get("num_attention_heads") or part.get("n_head")
        width = part.get("hidden_size") or part.get("n_embd")
        kv_heads = part.get("num_key_value_heads")
        if heads and width and not part.get("head_dim") and width % heads:
            raise FolderError(f"has a config.json whose width {width:,} does not split into {heads} heads")
        if heads and kv_heads and heads % kv_heads:
            raise FolderError(f"has a config.json with {heads} heads, not a multiple of its {kv_heads} "
                              "key/value heads")


def _weight_files(folder: Path) -> list[str]:
    """The safetensors files transformers would read: the index's shards, or model.safetensors."""
    index = _json_file(folder, INDEX, required=False)
    if index is None:
        if _inside(folder, WEIGHTS, required=False) is None:
            bins = sorted(p.name for p in folder.glob("*.bin"))[:1]
            found = f" (it has {shown(bins[0], 40)}, which is a pickle that could run code)" if bins else ""
            raise FolderError(f"has no {WEIGHTS}{found}; kvlab loads only safetensors weights, which cannot "
                              "run code")
        return [WEIGHTS]
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise FolderError(f"has a {INDEX} without a weight_map")
    names = []
    for entry in weight_map.values():
        if not isinstance(entry, str) or not entry:
            raise FolderError(f"has a {INDEX} with an entry that is not a file name")
        pure = PurePath(entry)
        if pure.is_absolute() or entry.startswith(("/", "\\", "~")) or ".." in pure.parts \
                or len(pure.parts) != 1 or "\\" in entry or ":" in entry:
            raise FolderError(f"has a {INDEX} that points outside the folder; every entry must be a "
                              "file name in the folder")
        if not entry.endswith(".safetensors"):
            raise FolderError(f"has a {INDEX} that points at {shown(pure.name, 40)}, which is not "
                              "safetensors; kvlab loads only safetensors weights, which cannot run code")
        if entry not in names:
            names.append(entry)
    return names


def _check_safetensors(folder: Path, name: str) -> int:
    """Read the header of a safetensors file and check that its tensors fill the file exactly."""
    path = _inside(folder, name, required=True)
    size = path.stat().st_size
    with open(path, "rb") as handle:
        start = handle.read(8)
        if len(start) < 8:
            raise FolderError(f"has a {shown(name, 40)} that is empty or cut off")
        (length,) = struct.unpack("<Q", start)
        if not 2 <= length <= min(MAX_HEADER_BYTES, size - 8):
            raise FolderError(f"has a {shown(name, 40)} that is cut off or not safetensors")
        try:
            header = json.loads(handle.read(length).decode("utf-8"))
        except (ValueError, RecursionError):
            raise FolderError(f"has a {shown(name, 40)} whose header is not safetensors") from None
    if not isinstance(header, dict):
        raise FolderError(f"has a {shown(name, 40)} whose header is not safetensors")
    available, end = size - 8 - length, 0
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        if not _tensor_entry_ok(entry, available):
            raise FolderError(f"has a {shown(name, 40)} that is cut off or damaged (tensor "
                              f"{shown(key, 40)} does not fit)")
        end = max(end, entry["data_offsets"][1])
    if end != available:
        raise FolderError(f"has a {shown(name, 40)} that is cut off or damaged ({available:,} bytes of data, "
                          f"its tensors need {end:,})")
    return size


def _tensor_entry_ok(entry, available: int) -> bool:
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPE_BYTES:
        return False
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not (isinstance(shape, list) and all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                            for d in shape)):
        return False
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)):
        return False
    begin, end = offsets
    return 0 <= begin <= end <= available and end - begin == math.prod(shape) * DTYPE_BYTES[entry["dtype"]]


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_training_report(report) -> None:
    """The fields the Real model page reads from a training.json written by viz.tools.train."""
    data = report.get("data") if isinstance(report, dict) else None
    ok = (isinstance(data, dict) and isinstance(data.get("source"), str)
          and isinstance(data.get("train_tokens"), int) and not isinstance(data.get("train_tokens"), bool)
          and all(_number(report.get(key)) for key in ("final_train_loss", "final_val_loss", "cpu_seconds")))
    if not ok:
        raise FolderError("has a training.json that is not a kvlab training report (it needs data.source, "
                          "data.train_tokens, final_train_loss, final_val_loss and cpu_seconds as numbers); "
                          "fix it or remove it")
