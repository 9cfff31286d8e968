"""Tier 1: a model folder named on the Real model page is checked before anything is loaded.

Each bad folder is built in tmp_path from a copy of the shipped model with one thing broken; each
is refused with one line that quotes only what was typed, never the resolved path on the server.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct

import pytest

from hostile_text import record
from viz.core.real.folder import FolderError, check_folder, display_name, folders_allowed, scrub
from viz.core.real.model import SHIPPED_DIR, RealModelError, load_model


FOLDERS = "Model folders and paths (Real model page, not public)"


@pytest.fixture
def model_copy(tmp_path):
    """A folder holding a copy of the shipped model, to break in one way per test."""
    folder = tmp_path / "server-secret" / "copy"
    shutil.copytree(SHIPPED_DIR, folder)
    return folder


def _config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def _shard(folder):
    """model.safetensors moved to a shard named by an index, as large models ship."""
    os.rename(folder / "model.safetensors", folder / "model-00001-of-00001.safetensors")
    return {"metadata": {}, "weight_map": {"transformer.wte.weight": "model-00001-of-00001.safetensors"}}


def _index(folder, entry):
    index = _shard(folder)
    index["weight_map"]["lm_head.weight"] = entry
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))


def _truncate(folder, keep):
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:keep])


BREAKS = {
    "index points at pytorch_model.bin": (lambda f: _index(f, "pytorch_model.bin"), "not safetensors"),
    "index points at an absolute path": (lambda f: _index(f, "/etc/passwd.safetensors"), "points outside"),
    "index points outside": (lambda f: _index(f, "../other/model.safetensors"), "points outside"),
    "index without weight_map": (
        lambda f: (_shard(f), (f / "model.safetensors.index.json").write_text("{}")), "without a weight_map"),
    "empty model.safetensors": (lambda f: (f / "model.safetensors").write_bytes(b""), "empty or cut off"),
    "truncated model.safetensors": (lambda f: _truncate(f, 100_000), "cut off"),
    "header only": (lambda f: _truncate(f, 8 + struct.unpack("<Q", (f / "model.safetensors").read_bytes()[:8])[0]),
                    "cut off"),
    "garbage weights": (lambda f: (f / "model.safetensors").write_bytes(b"\xff" * 64), "cut off or not safetensors"),
    "pickle only": (lambda f: (os.remove(f / "model.safetensors"), (f / "pytorch_model.bin").write_bytes(b"x")),
                    "pytorch_model.bin, which is a pickle"),
    "weights linked from outside": (
        lambda f: (shutil.move(f / "model.safetensors", f.parent / "outside.safetensors"),
                   os.symlink(f.parent / "outside.safetensors", f / "model.safetensors")), "leads outside"),
    "no tokenizer files": (lambda f: os.remove(f / "tokenizer.json"), "has no tokenizer files"),
    "n_head -4": (lambda f: _config(f, n_head=-4), "n_head is -4; it must be at least 1"),
    "n_head 0": (lambda f: _config(f, n_head=0), "n_head is 0; it must be at least 1"),
    "n_head as text": (lambda f: _config(f, n_head="4"), "n_head must be a whole number"),
    "n_layer huge": (lambda f: _config(f, n_layer=10**9), "n_layer is 1,000,000,000"),
    "no model_type": (lambda f: _config(f, model_type=None), "no \"model_type\""),
    "width not split by heads": (lambda f: _config(f, n_head=3), "does not split into 3 heads"),
    "config not an object": (lambda f: (f / "config.json").write_text("[1, 2]"), "is a JSON object ({...}), not a list"),
    "config not JSON": (lambda f: (f / "config.json").write_text("{n_head: 4"), "not valid JSON"),
    "no config": (lambda f: os.remove(f / "config.json"), "has no config.json"),
    "non-numeric training.json": (
        lambda f: (f / "training.json").write_text(json.dumps(
            {**json.loads((f / "training.json").read_text()), "final_train_loss": "low"})), "training report"),
    "training.json not an object": (lambda f: (f / "training.json").write_text('"x"'), "training report"),
}


@pytest.mark.parametrize("case", BREAKS)
def test_bad_model_folders_are_refused_before_loading(model_copy, case, monkeypatch):
    """Each broken folder is refused by the check, before transformers is asked to load anything,
    with one line that names the problem and not the server's path."""
    breaks, message = BREAKS[case]
    breaks(model_copy)
    import transformers

    def no_load(*args, **kwargs):
        raise AssertionError("transformers was asked to load a folder the check should refuse")
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_load)
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_load)
    typed = "server-secret/copy"
    monkeypatch.chdir(model_copy.parent.parent)
    with pytest.raises(RealModelError) as err:
        load_model(typed, "cpu")
    text = str(err.value)
    assert message in text and "\n" not in text and text.startswith(f"'{typed}'")
    assert str(model_copy.parent.parent) not in text  # only what was typed, never the resolved path
    record(FOLDERS, "refused")


@pytest.mark.parametrize("typed, message", [
    ("x" * 5000, "too long (5,000 characters"),
    ("bad\x00path", "control characters"),
    ("bad\ud800path", "control characters"),
    ("/no/such/model", "is not a directory this server can read"),
    ("~no-such-user-kvlab/model", "is not a directory this server can read"),
])
def test_bad_paths_are_refused_with_one_line(typed, message):
    """An overlong, unprintable or missing path is refused without echoing more than 60 characters."""
    with pytest.raises(FolderError) as err:
        check_folder(typed)
    assert message in str(err.value) and len(str(err.value)) < 200 and "\n" not in str(err.value)
    record(FOLDERS, "refused")


def test_a_good_copy_passes_and_is_named_as_typed(model_copy, monkeypatch):
    """The shipped model copied elsewhere passes the check; its name is the last part of what was typed."""
    monkeypatch.chdir(model_copy)
    assert check_folder(".") == model_copy.resolve()
    assert display_name(".") == "." and display_name("~/models/gpt2/") == "gpt2"
    real = load_model(".", "cpu")
    assert real.name == "." and "server-secret" not in real.name
    record(FOLDERS, "ran")


def test_library_messages_lose_server_paths(model_copy):
    """A message from transformers keeps what was typed in place of the folder and hides other paths."""
    text = scrub(f"no file named x in {model_copy} or /root/.cache/huggingface/hub", model_copy, "my-model")
    assert text == "no file named x in my-model or …"


def test_a_sharded_model_with_a_clean_index_passes(model_copy):
    """An index whose every entry is a safetensors file in the folder is accepted."""
    index = _shard(model_copy)
    (model_copy / "model.safetensors.index.json").write_text(json.dumps(index))
    assert check_folder(str(model_copy)) == model_copy.resolve()
    record(FOLDERS, "ran")


def test_a_refusal_does_not_tell_what_exists_on_the_server(tmp_path):
    """A missing path, a file and a path through a file are refused with the same sentence (the typed
    text aside), so typing paths learns nothing about what is on the disk."""
    (tmp_path / "a-file").write_text("x")
    messages = set()
    for typed in (tmp_path / "missing", tmp_path / "a-file", tmp_path / "a-file" / "inner"):
        with pytest.raises(FolderError) as err:
            check_folder(typed)
        messages.add(re.sub(r"^'.*' is", "'…' is", str(err.value)))
    assert messages == {"'…' is not a directory this server can read"}


def test_folders_are_off_unless_the_operator_turns_them_on(monkeypatch):
    """Loading a local folder is off by default, on with KVLAB_MODEL_FOLDERS=1, and off on a public host."""
    monkeypatch.delenv("KVLAB_MODEL_FOLDERS", raising=False)
    monkeypatch.delenv("KVLAB_PUBLIC", raising=False)
    assert not folders_allowed()
    monkeypatch.setenv("KVLAB_MODEL_FOLDERS", "1")
    assert folders_allowed()
    monkeypatch.setenv("KVLAB_PUBLIC", "1")
    assert not folders_allowed()
