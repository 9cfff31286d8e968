"""The frame around the lessons (issue 32): Plotly's toolbar never lies over a figure's title."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest


def test_no_plotly_toolbar_covers_a_title():
    """Every Plotly figure At scale draws (five at its first view) is sent without Plotly's toolbar,
    which lay over the top right of the figure, where its title ends (on a phone, after a tap)."""
    at = AppTest.from_file("../app.py", default_timeout=120)
    at.query_params["page"] = "at_scale"
    at.run()
    configs = [json.loads(chart.proto.config) for chart in at.get("plotly_chart")]
    assert not at.exception and len(configs) >= 3
    assert all(config.get("displayModeBar") is False for config in configs), configs
