"""kvlab: the Streamlit entry point (placeholder until the app lands)."""

import streamlit as st

from viz import generate, load_preset

st.title("kvlab")
trace = generate(load_preset("seed"), 1)
st.write("Prediction after prefill:", trace.steps[0].token)
