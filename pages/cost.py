"""Cost: recomputation's O(n²) against the KV cache's O(n), counted by the engine and timed live."""

import streamlit as st

from viz.core.engine import cost as sweep
from viz.core.lessons import words_cost as words
from viz.core.lessons.cost import cost_view
from viz.core.text import first_line
from viz.figures import cost
from viz.ui import state
from viz.ui.common import defined_caption, for_developers, md_escape, page_lead, plot

state.require_frame()
RESULTS = "cost_results"  # {device kind: CostMeasurement}: this session's measurements
DEVICE = "cost_device"
FAILURE = "cost_failure"  # why the last measurement failed, shown until the next one succeeds


def counts(table) -> dict:
    """Whole-number columns with thousands separators."""
    return {column: st.column_config.NumberColumn(format="localized")
            for column in table.columns if table[column].dtype.kind == "i"}


@st.cache_data(max_entries=4, ttl=600, show_spinner=words.QUICK_SPINNER)
def quick_measurement(device: str, config: sweep.LiveConfig) -> sweep.CostMeasurement:
    """The small sweep shown on arrival, one per device and configuration, shared for ten minutes
    (a first visit never waits long, and many arrivals do not each time the machine)."""
    return sweep.live_cost(device, None, config)


page_lead("cost")
terms: set[str] = set()  # the glossary terms defined under a figure so far (each once)

results = st.session_state.setdefault(RESULTS, {})
devices = sweep.available_devices()
live = sweep.LIVE
model = sweep.bench_scenario()

with st.container(border=True):
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    with left:
        if len(devices) > 1:
            device = st.segmented_control("Device", devices, default=devices[0], required=True,
                                          key=DEVICE)
        else:
            device = devices[0]
            st.markdown(words.only_device(device))
    measure = right.button(words.measure_label(device in results), type="primary",
                           icon=":material/speed:", width="stretch", key="cost_measure")
lesson = st.container()  # the decode figure, right under the Measure row; the notes below it

if measure:
    bar = st.progress(0.0, text=words.STARTING)
    try:
        results[device] = sweep.live_cost(
            device, lambda done, text: bar.progress(done, text=words.measuring(text)), live)
        st.session_state[FAILURE] = None
        st.rerun()  # draw the page again around the new results
    except sweep.MeasurementBusy as err:
        st.session_state[FAILURE] = str(err)
    except (RuntimeError, ValueError) as err:
        st.session_state[FAILURE] = words.failed(first_line(err))
    bar.empty()
if st.session_state.get(FAILURE):
    st.warning(st.session_state[FAILURE], icon=":material/hourglass_top:")

measurement, quick = results.get(device), None
if measurement is None:  # on arrival: a quick sweep, so the page never opens empty
    try:
        measurement, quick = quick_measurement(device, sweep.QUICK), sweep.QUICK
    except (sweep.MeasurementBusy, RuntimeError, ValueError):
        pass
view = cost_view(measurement, quick, live, model, md_escape, device_type=device)
summary = view.summary
if view.notice and quick is not None:  # the arrival's quick sweep: said beside Measure, above the figure
    left.caption(view.notice)
elif view.notice:  # nothing measured: the plain version, in the figure's place
    st.info(view.notice, icon=":material/speed:")
if view.cut_short:
    st.warning(words.CUT_SHORT)
elif summary is not None:
    with lesson:
        plot(cost.decode_figure(measurement), key="cost_decode", terms=terms)  # its title names it
    defined_caption(view.measured)  # 'Measured on cuda': the hover says what CUDA is
    for paragraph in view.decode_reading:
        st.markdown(paragraph)
    with st.expander("Every decode measurement"):
        table = cost.decode_table(measurement)
        st.dataframe(table, hide_index=True, width="stretch", column_config=counts(table))

    st.subheader(words.PREFILL_HEADING)
    if measurement.prefill:
        plot(cost.prefill_figure(measurement), key="cost_prefill", terms=terms)
        for paragraph in view.prefill_reading:
            st.markdown(paragraph)
        with st.expander("Every prefill measurement"):
            table = cost.prefill_table(measurement)
            st.dataframe(table, hide_index=True, width="stretch", column_config=counts(table))
    else:
        st.caption(words.NO_PREFILL)

defined_caption(view.how, st.expander(words.HOW_HEADING, icon=":material/info:"))
developers = for_developers()
developers.markdown(words.BENCHMARK)
developers.code(words.BENCH_COMMANDS, language="bash")
