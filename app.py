"""kvlab: the router and the shared frame around every page.

Restores the view from the URL, draws the shared sidebar (scenario editors, presets, presenter
mode, device badge, the link to this view), runs the selected page, then writes the view back into
the URL so the address bar is always a share link. The sidebar and the page run inside the guard
(viz.ui.guard): whatever they raise becomes a short message, the last view that rendered comes
back, the traceback goes to the server log.

The navigation is ordered as a lesson: start (Home, the guided tour), the two phases (Prefill,
Decode), what the cache costs and saves (Cost, Memory, At scale), then the real thing (Real model,
Serving). Home is served at /; a link made before Home existed (/ with a view in it) opens Prefill.
"""

import os

import streamlit as st
import torch

from viz.ui import class_links, classroom, guard, sidebar, state
from viz.ui.board import fold_sidebar
from viz.ui.common import favicon
from viz.ui.widgets import presenter_style

# Many small requests at once: one torch thread per script run keeps sessions from fighting over
# the cores. KVLAB_TORCH_THREADS raises it (the Cost page's timings use whatever is set here).
torch.set_num_threads(int(os.environ.get("KVLAB_TORCH_THREADS", "1")))
# The sidebar's one width (sidebar.WIDTH_PX); presenter mode folds it. The browser reads the width once,
# when it first draws the sidebar (st.navigation's page list draws it), so a session's first run sends
# it here, before anything else; later runs send only the state, below (a later run that sent the
# width, then "collapsed", could leave a presenter's sidebar unfolded). Sent after st.navigation, it
# came too late on some visits: Streamlit's default 300 px (as still for a cold server's very first
# visitor, whom Streamlit shows the pages/ folder's list before app.py runs).
st.set_page_config(page_title="kvlab", page_icon=favicon(), layout="wide",
                   initial_sidebar_state=None if st.session_state.get(state.READY) else sidebar.WIDTH_PX)

# Each url_path is its file's name: until some session has called st.navigation, Streamlit's legacy
# pages/ discovery answers a first visit by file name (state.require_frame then runs this frame around it).
# Made once per session (st.Page resolves its file on the disk, a tenth of a follower's rerun in a class of
# thirty); not once per process, since st.navigation marks the page it returns for the run that calls it.
if state.PAGE_LIST not in st.session_state:
    st.session_state[state.PAGE_LIST] = [
        st.Page("pages/home.py", title="Home", icon=":material/home:", default=True),  # served at /
        st.Page("pages/tour.py", title="Guided tour", icon=":material/school:", url_path="tour"),
        st.Page("pages/prefill.py", title="Prefill", icon=":material/grid_on:", url_path="prefill"),
        st.Page("pages/decode.py", title="Decode", icon=":material/playlist_add:", url_path="decode"),
        st.Page("pages/cost.py", title="Cost", icon=":material/speed:", url_path="cost"),
        st.Page("pages/memory.py", title="Memory", icon=":material/view_module:", url_path="memory"),
        st.Page("pages/at_scale.py", title="At scale", icon=":material/calculate:", url_path="at_scale"),
        st.Page("pages/real_model.py", title="Real model", icon=":material/neurology:", url_path="real_model"),
        st.Page("pages/serving.py", title="Serving", icon=":material/dns:", url_path="serving"),
    ]
PAGES = st.session_state[state.PAGE_LIST]
# Pages that read the scenario show its editors; the others (Home, the tour on the seed, Cost on its
# benchmark scenario, Real model on its own model) leave them out of the sidebar.
EDITOR_PAGES = {"prefill", "decode", "memory", "at_scale", "serving"}
LINKABLE = frozenset(p.url_path for p in PAGES if p.url_path)  # the pages a share link may name
classroom.open_short_link()  # a short link (/?v=…) becomes its view before the address is read
page = st.navigation(PAGES)
state.init(page.url_path, LINKABLE)
# Presenter mode opens with the sidebar folded and unfolds it on exit (Streamlit applies a changed
# initial state; a sidebar the visitor folded or unfolded by hand keeps that choice in the browser).
st.set_page_config(initial_sidebar_state="collapsed" if state.presenter() else sidebar.WIDTH_PX)
# a share link opens at / and names its page (state.link_params); an old link there means Prefill
target = state.link_target()
if target:
    st.switch_page(next(p for p in PAGES if p.url_path == target))
classroom.begin({p.url_path: p for p in PAGES}, page.url_path)  # class mode (viz.ui.classroom)
guard.begin()
# presenter mode's large type (as set by the sidebar switch's callback, before this run)
presenter_style(state.presenter())
turned = state.presenter_turned()  # presenter mode turned on or off: fold or unfold the sidebar, below
editors = page.url_path in EDITOR_PAGES
with guard.frame("the sidebar", st.sidebar):
    sidebar.render(editors, page.url_path, following=classroom.following())
    classroom.panel()
top = st.container()  # the guard's message goes above whatever the page drew before it failed
refused = state.refused_edits() if editors else []
if refused:  # the sidebar shows each message next to its editor; the page says what is in force
    top.warning(f"Your last edit of the {', '.join(refused)} was refused (the sidebar says why): "
                "this page still shows the last good scenario.", icon=":material/history:")
with guard.frame(f"the page {page.title}", top):
    classroom.bar(explore=editors)  # a class's join screen, or a student's following line
    state.framed(page.run)
guard.remember()
with guard.frame("the link to this view", st.sidebar, admit=False):  # computes nothing: never waits
    sidebar.share_link()
    class_links.short_link(page.url_path)
    classroom.sync()  # the teacher's screen publishes its view (again, if the page moved it)
    if turned:  # even a sidebar moved by hand, which Streamlit's initial state leaves as it was
        fold_sidebar(state.presenter())
state.sync_url(page.url_path)
