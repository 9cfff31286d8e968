"""Layer 1, the core: scenarios, the rule language, the torch engine, caches and every derived number.

Imports torch (and transformers, lazily, for the real model); never streamlit, plotly or pandas.
See docs/design.md for the layers and the toy model's exact semantics.
"""
