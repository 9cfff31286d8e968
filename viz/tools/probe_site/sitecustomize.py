"""Loaded at start-up only by processes that viz.tools.paint starts with this folder on PYTHONPATH:
installs the server-side timing probe (viz.tools.probe) when KVLAB_PROBE_LOG names its log file."""

import os

if os.environ.get("KVLAB_PROBE_LOG"):
    from viz.tools import probe

    probe.install(os.environ["KVLAB_PROBE_LOG"])
