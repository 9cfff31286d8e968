"""The deployable configuration: requirements.txt installs into a fresh virtual environment, the
app starts from it with the hosting settings, and the health endpoint answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import urllib.request
from pathlib import Path

import pytest

from viz.tools.server import StreamlitServer

ROOT = Path(__file__).resolve().parents[1]


def _get(url: str, timeout: float = 5.0) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode("utf-8", "replace")


def _hosting_config() -> dict:
    return tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())


def test_hosting_settings():
    """XSRF protection is on, visitors see no error details, uploads are capped."""
    config = _hosting_config()
    assert config["server"]["enableXsrfProtection"] is True
    assert config["client"]["showErrorDetails"] == "none"
    assert config["server"]["maxUploadSize"] <= 1
    assert config["browser"]["gatherUsageStats"] is False


def _luminance(hex_colour: str) -> float:
    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_captions_and_links_read_at_wcag_aa():
    """Streamlit draws captions in the theme's text colour at 60% opacity: on white that and the
    link colour still reach 4.5 : 1 (no CSS aimed at Streamlit's own elements does it)."""
    theme = _hosting_config()["theme"]
    text = theme["textColor"]
    faded = "#" + "".join(f"{round(255 - 0.6 * (255 - int(text[i:i + 2], 16))):02x}" for i in (1, 3, 5))
    for colour in (faded, theme["linkColor"]):
        assert (1.05) / (_luminance(colour) + 0.05) >= 4.5, colour


def test_requirements_take_the_project_and_a_cpu_torch():
    """requirements.txt installs the project itself (no second dependency list) and a CPU torch."""
    lines = [line.strip() for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "." in lines
    assert any(line.startswith("torch==") and line.endswith("+cpu") for line in lines)
    assert any("download.pytorch.org/whl/cpu" in line for line in lines)


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A new virtual environment with only requirements.txt installed (as a hosting service does)."""
    venv = tmp_path_factory.mktemp("deploy") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {**os.environ, "PIP_DEFAULT_TIMEOUT": "10", "PIP_RETRIES": "0"}  # the torch CPU index may be offline here
    result = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", "requirements.txt"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=1500)
    assert result.returncode == 0, result.stderr[-2000:]
    return venv


def test_app_starts_from_requirements_in_a_fresh_venv(fresh_venv, tmp_path):
    """streamlit run app.py from that environment serves the health endpoint and the page."""
    server = StreamlitServer(tmp_path / "server.log", command=(str(fresh_venv / "bin" / "streamlit"),))
    with server:  # started; raises with the server's log if /_stcore/health does not answer
        status, body = _get(f"{server.url}/_stcore/health")
        assert (status, body.strip()) == (200, "ok")
        status, page = _get(f"{server.url}/")
        assert status == 200 and "<div id=\"root\">" in page
        status, host = _get(f"{server.url}/_stcore/host-config")  # no embedding page may script the app
        assert status == 200 and json.loads(host)["allowedOrigins"] == []
        probe = [str(fresh_venv / "bin" / "python"), "-c",
                 "import torch, viz; print(torch.__version__); viz.generate(viz.load_preset('seed'), 2)"]
        version = subprocess.run(probe, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert version.returncode == 0, version.stderr[-2000:]
        assert version.stdout.strip().endswith("+cpu")
