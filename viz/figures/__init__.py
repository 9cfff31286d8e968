"""Figure builders: pure functions from engine results to plotly figures or pandas tables (no streamlit)."""
