"""Home: what kvlab is, three ways in (the tour, presenting in class, exploring), and the article."""

import streamlit as st

from viz.core.lessons.home import home_view
from viz.ui import article, state
from viz.ui.common import lesson_header

state.require_frame()
view = home_view(article.link())

if state.presenter():  # the projector's first line, as every page's (the title for screen readers): the cards whole in 1280 × 720
    lesson_header(view.title, view.lead, name=view.name)
else:
    st.title(view.title)
# few elements: a first view pays for each one (the two paragraphs are one element, and each card's
# heading is part of its text)
st.markdown(view.intro)

tour, present, explore = st.columns(3, gap="medium")
with tour.container(border=True, height="stretch"):
    st.markdown(view.tour)
    st.page_link("pages/tour.py", label="Start the guided tour", icon=":material/school:")
with present.container(border=True, height="stretch"):
    st.markdown(view.present)
    if st.button("Present Decode", icon=":material/co_present:", key="home_present_decode",
                 on_click=state.set_presenter, args=(True,)):
        st.switch_page("pages/decode.py")
    if st.button("Present the tour", icon=":material/how_to_vote:", key="home_present_tour",
                 on_click=state.set_presenter, args=(True,)):
        st.switch_page("pages/tour.py")
with explore.container(border=True, height="stretch"):
    st.markdown(view.explore)
    st.page_link("pages/prefill.py", label="Open Prefill", icon=":material/grid_on:")

if not state.presenter():  # the folded sidebar lists the pages; on a projector the line ran past 720 px
    st.caption(view.pages)
