"""Home: what kvlab is, three ways in (the tour, presenting in class, exploring), and the article."""

import streamlit as st

from viz.ui import article, state

state.require_frame()

st.title("kvlab: from prompt to prediction")
# few elements: a first view pays for each one (the two paragraphs are one element, and each card's
# heading is part of its text)
st.markdown("How does a language model turn a prompt into its next word, and why does it keep a **KV "
            "cache**? kvlab runs a tiny transformer you can read cell by cell: the parallel **prefill** "
            "pass over the prompt, the token-by-token **decode** loop, and the cache that saves decode from "
            "computing every key and value again. Every number on screen is computed live by PyTorch.\n\n"
            f"It follows the worked example of the article {article.link()}: the same four-token prompt, "
            "four hand-written attention heads and the same numbers, so you can check each one.")

tour, present, explore = st.columns(3, gap="medium")
with tour.container(border=True, height="stretch"):
    st.markdown("### Take the tour\n\n"
                "Nine short steps through the article's example. Each asks you to predict a number "
                "before it shows it; your score is at the end. About 15 minutes.")
    st.page_link("pages/tour.py", label="Start the guided tour", icon=":material/school:")
with present.container(border=True, height="stretch"):
    st.markdown("### Present in class\n\n"
                "Large type for a projector, editors folded away, ← and → to step. Show decode step by "
                "step, or run the tour as a class vote: question, vote, Reveal.")
    if st.button("Present Decode", icon=":material/co_present:", key="home_present_decode",
                 on_click=state.set_presenter, args=(True,)):
        st.switch_page("pages/decode.py")
    if st.button("Present the tour", icon=":material/how_to_vote:", key="home_present_tour",
                 on_click=state.set_presenter, args=(True,)):
        st.switch_page("pages/tour.py")
with explore.container(border=True, height="stretch"):
    st.markdown("### Explore\n\n"
                "Change the prompt, the heads' rules and the vocabulary in the sidebar and watch prefill, "
                "decode, the cache's cost and memory respond. Share the view with its link.")
    st.page_link("pages/prefill.py", label="Open Prefill", icon=":material/grid_on:")

st.caption("The pages, in lesson order: the guided tour; Prefill and Decode, the two phases; Cost, Memory and "
           "At scale, what the cache costs and saves; Real model and Serving, the same ideas in a real model "
           "and a server. The example and its numbers are the article's; kvlab's text and code are its own.")
