"""Cost: recomputation's O(n²) against the KV cache's O(n), counted by the engine and timed live."""

import streamlit as st

from viz.core.engine import cost as sweep
from viz.core.text import first_line
from viz.figures import cost
from viz.ui import state
from viz.ui.common import for_developers, md_escape, page_lead, plot

state.require_frame()
RESULTS = "cost_results"  # {device kind: CostMeasurement}: this session's measurements
DEVICE = "cost_device"
FAILURE = "cost_failure"  # why the last measurement failed, shown until the next one succeeds


def counts(table) -> dict:
    """Whole-number columns with thousands separators."""
    return {column: st.column_config.NumberColumn(format="localized")
            for column in table.columns if table[column].dtype.kind == "i"}


@st.cache_data(max_entries=4, ttl=600, show_spinner="Measuring a quick first sweep on this machine…")
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
            st.markdown(f"Device: **{device}** (the only one on this machine)")
    measure = right.button("Measure again" if device in results else "Measure", type="primary",
                           icon=":material/speed:", width="stretch", key="cost_measure")
# what Measure times: folded under the lesson
how = (f"Times one decode step at n = {live.decode_sizes[0]} … {live.decode_sizes[-1]} keys "
       f"(recompute up to {live.recompute_max}) and a whole prompt of {live.prefill_sizes[0]} … "
       f"{live.prefill_sizes[-1]} tokens, with the {len(model.heads)} heads of the "
       f"'{md_escape(model.title)}' preset (d_k = {model.d_k}). Sizes stop growing once the next "
       f"one would pass {live.budget_s:g} s in all, so one click never ties up the server; the "
       "results stay for this session.")
lesson = st.container()  # the decode figure, right under the Measure row; the notes below it

if measure:
    bar = st.progress(0.0, text="Starting…")
    try:
        results[device] = sweep.live_cost(
            device, lambda done, text: bar.progress(done, text=f"Measuring {text}"), live)
        st.session_state[FAILURE] = None
        st.rerun()  # draw the page again around the new results
    except sweep.MeasurementBusy as err:
        st.session_state[FAILURE] = str(err)
    except (RuntimeError, ValueError) as err:
        st.session_state[FAILURE] = f"The measurement failed: {first_line(err)}"
    bar.empty()
if st.session_state.get(FAILURE):
    st.warning(st.session_state[FAILURE], icon=":material/hourglass_top:")

measurement = results.get(device)
if measurement is None:  # on arrival: a quick sweep, so the page never opens empty
    try:
        measurement = quick_measurement(device, sweep.QUICK)
        st.info(f"A quick first measurement (decode up to n = {sweep.QUICK.decode_sizes[-1]}, about "
                f"{sweep.QUICK.budget_s:g} s). Press **Measure** for the full sweep.", icon=":material/speed:")
    except (sweep.MeasurementBusy, RuntimeError, ValueError):
        st.info("Press **Measure** to time decoding on this machine. Until then, the plain version: "
                "without a cache every new token redoes the whole n × n attention, O(n²) work per token; "
                "with a cache it computes one new key and reads the n cached ones, O(n).",
                icon=":material/speed:")
summary = sweep.summarize_cost(measurement) if measurement else None
if measurement is None:
    pass
elif summary is None:
    st.warning("The measurement was cut short before it timed both decode modes at one size; "
               "press Measure again.")
else:
    left_out = ", ".join(measurement.left_out)
    with lesson:
        plot(cost.decode_figure(measurement), key="cost_decode", terms=terms)  # its title names it
    st.caption(f"Measured on {measurement.device} ({measurement.threads} CPU thread"
               f"{'s' if measurement.threads > 1 else ''}) in {measurement.seconds:.1f} s."
               + (f" Left out to stay within {measurement.budget_s:g} s: {left_out}." if left_out else ""))
    for paragraph in cost.decode_reading(summary, device):
        st.markdown(paragraph)
    with st.expander("Every decode measurement"):
        table = cost.decode_table(measurement)
        st.dataframe(table, hide_index=True, width="stretch", column_config=counts(table))

    st.subheader("Prefill: one pass, or one token at a time")
    if measurement.prefill:
        plot(cost.prefill_figure(measurement), key="cost_prefill", terms=terms)
        for paragraph in cost.prefill_reading(summary):
            st.markdown(paragraph)
        with st.expander("Every prefill measurement"):
            table = cost.prefill_table(measurement)
            st.dataframe(table, hide_index=True, width="stretch", column_config=counts(table))
    else:
        st.caption("The time budget ran out before prefill; press Measure again.")

st.expander("What Measure times", icon=":material/info:").caption(how)
developers = for_developers()
developers.markdown("**The full benchmark.** The command line runs larger sizes (decode up to "
                    "n = 16,384), compares the cache with Hugging Face transformers' `DynamicCache` and "
                    "`StaticCache`, measures this machine's memory bandwidth to show how close cached decode "
                    "comes to the fastest possible, and times a page rerun of this app. It prints tables and "
                    "writes JSON:")
developers.code("python -m viz bench --out results.json      # a few minutes\n"
                "python -m viz bench --quick                 # a few seconds", language="bash")
