"""The hosting lock (requirements.lock): every dependency of pyproject.toml pinned, with hashes, to
the release the tests run on; and pip takes it in hash-checking mode."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)((?:\s*\\\s*--hash=sha256:[0-9a-f]{64})+)", re.M)


def _locked() -> dict[str, tuple[str, int]]:
    """{package: (version, number of hashes)}, as the lock pins them."""
    text = LOCK.read_text(encoding="utf-8")
    return {canonicalize_name(name): (version, hashes.count("--hash=")) for name, version, hashes in PIN.findall(text)}


def _dependencies() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [Requirement(line) for line in project["dependencies"]]


def test_every_line_of_the_lock_is_a_pin_with_hashes():
    """Each requirement is name==version with at least one sha256 (pip's --require-hashes needs both);
    besides comments, the only other line is the CPU index PyTorch's build comes from."""
    lines = [line for line in LOCK.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    blocks = re.split(r"\n(?! )", "\n".join(lines))  # a block: a line and the indented lines under it
    assert blocks[0] == "--extra-index-url https://download.pytorch.org/whl/cpu"
    assert all(PIN.fullmatch(block) for block in blocks[1:]), [b for b in blocks[1:] if not PIN.fullmatch(b)][:3]
    assert len(_locked()) == len(blocks) - 1


def test_the_lock_holds_every_dependency_within_its_range():
    """Every dependency pyproject.toml names is locked at a version its range allows: Streamlit in
    the tested series, torch 2.13.0 (the CPU build)."""
    locked = _locked()
    for requirement in _dependencies():
        version, _ = locked[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(Version(version), prereleases=True), (requirement, version)
    streamlit = next(r for r in _dependencies() if r.name == "streamlit")
    assert str(streamlit.specifier) in (">=1.67,<1.68", "<1.68,>=1.67")
    assert locked["torch"][0] == "2.13.0+cpu"


def test_the_lock_is_what_the_tests_run_on():
    """Each locked package installed here is installed at its locked version: the hosted app runs
    on what the tests ran on."""
    differ = {}
    for name, (version, _) in _locked().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
        if Version(installed) != Version(version):
            differ[name] = (installed, version)
    assert not differ, differ
    assert metadata.version("streamlit") == _locked()["streamlit"][0]


def _reachable(url: str) -> bool:
    """Whether a TCP connection to the url's host opens within three seconds."""
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port or 443), timeout=3).close()
        return True
    except OSError:
        return False


@pytest.mark.slow
def test_pip_takes_the_lock_in_hash_checking_mode(tmp_path):
    """pip resolves the whole lock with --require-hashes, downloading each file and checking its
    hash (a dry run: nothing is installed), and would install exactly the locked versions. Where
    PyTorch's CPU index cannot be reached (a machine that keeps its wheel in pip's find-links), the
    lock is read without that line, rather than asking an unreachable host for every package."""
    lock = LOCK.read_text(encoding="utf-8")
    index = re.search(r"^--extra-index-url (\S+)$", lock, re.M).group(1)
    if not _reachable(index):
        lock = lock.replace(f"--extra-index-url {index}\n", "")
    (tmp_path / "requirements.lock").write_text(lock, encoding="utf-8")
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                             "--require-hashes", "-r", str(tmp_path / "requirements.lock"), "--report", str(report),
                             "-q"], capture_output=True, text=True, timeout=1500, cwd=ROOT,
                            env={**os.environ, "PIP_DEFAULT_TIMEOUT": "30"})
    assert result.returncode == 0, result.stderr[-3000:]
    chosen = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
              for item in json.loads(report.read_text())["install"]}
    assert chosen == {name: version for name, (version, _) in _locked().items()}
