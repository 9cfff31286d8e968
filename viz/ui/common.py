"""Small rendering helpers shared by the pages: charts, headers, messages. No math here."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from . import state

PLOT_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def plot(fig: go.Figure, key: str | None = None) -> None:
    """Show a plotly figure at full width; in presenter mode with larger type."""
    if state.presenter():
        fig.update_layout(font_size=18)
    st.plotly_chart(fig, width="stretch", config=PLOT_CONFIG, key=key)


def header(title: str, caption: str) -> None:
    """Page title and one line on what the page shows."""
    st.title(title)
    st.caption(caption)
