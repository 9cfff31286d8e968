import streamlit as st

from viz.ui import state

state.require_frame()
st.info("This page is being built.")
