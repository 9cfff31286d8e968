"""Tier 1: the small tables of Serving, At scale, Memory and Real model fit a 390 × 844 phone's column.

``st.table`` wraps a cell at its spaces (and after a hyphen), never inside a word, so a table is at
least as wide as the sum over its columns of its longest word plus the cell's padding. The server never
learns the screen's width, so each table keeps to columns and headers a phone's 356 px column holds
(issue 32's review: three Serving tables scrolled 25–45 px sideways on a phone, and At scale's, Memory's
and Real model's data grids 24–630 px). The estimate below is a little generous (it put Serving's
iteration table at 434 px where Chromium measured 388 px); tests/browser/test_review_layout.py measures
the real thing.
"""

from __future__ import annotations

import re

import pytest

from figure_gallery import tables
from viz import generate, load_preset
from viz.core.scale.gpus import GPU_BY_NAME
from viz.core.scale.model_config import preset, preset_names
from viz.core.scale.view import ScaleInputs, scale_view
from viz.core.serving.paged import decode_together, variants
from viz.figures import memory, roofline
from viz.figures.base import plain_table

PHONE_COLUMN_PX = 356  # a 390 px phone's main column, as Chromium lays it out
CHAR_PX = 7  # one character of the table's 14 px type, a little over its mean width
CELL_PADDING_PX = 17  # a cell's padding and border
BREAKS = re.compile(r"\s+|(?<=-)")  # where st.table may wrap a cell


def narrowest_px(frame) -> int:
    """The least width the table can be laid out in: each column's longest unbreakable word."""
    spec = plain_table(frame, "")
    columns = zip(*([spec["columns"]] + spec["rows"]))
    return sum(max(len(word) for cell in column for word in BREAKS.split(cell)) * CHAR_PX + CELL_PADDING_PX
               for column in columns)


def scale_tables():
    """At scale's four small tables for every preset model at its own context, batch 8, on one H100."""
    toy = generate(load_preset("seed"), 1, "kv").cache
    for name in preset_names():
        config = preset(name)
        view = scale_view(ScaleInputs(config, config.max_context, "fp16/bf16", 8, GPU_BY_NAME["H100 SXM"], 1,
                                      config.weights_dtype, 0.92, 1.0), toy)
        yield f"{name}: GPUs", memory.gpu_table(list(view.fits))
        yield f"{name}: dtypes", memory.dtype_table(list(view.dtypes))
        yield f"{name}: toy", memory.toy_table(view.toy, view.memory)
        yield f"{name}: steps", roofline.steps_table(view.points(config.max_context))


def test_an_estimate_of_too_wide_fails():
    """The estimate sees a table too wide: Serving's old seven-column iteration table (request, doing,
    computed, entries held, block table, chose, note) did not fit."""
    old = {"request": ["R1"], "doing": ["waiting"], "computed": [0], "entries held": [10],
           "block table": ["0 1 2"], "chose": ["salty"], "note": ["every batch slot is taken"]}
    assert narrowest_px(old) > PHONE_COLUMN_PX


@pytest.mark.parametrize("name", ["requests", "iteration", "speculative", "running", "traffic", "eviction"])
def test_serving_and_memory_tables_fit_a_phone(name):
    frame = dict(tables())[name]
    assert narrowest_px(frame) <= PHONE_COLUMN_PX, (name, list(frame.columns))


def test_at_scale_tables_fit_a_phone_for_every_model():
    wide = {name: narrowest_px(frame) for name, frame in scale_tables() if narrowest_px(frame) > PHONE_COLUMN_PX}
    assert not wide, wide


def test_memory_pool_tables_fit_a_phone():
    """The block tables and the sequences of a pool of three sequences (blocks of 4, 4 predictions)."""
    seed = load_preset("seed").cache_safe()
    run = decode_together(seed, variants(seed, 3), 4, max_new_tokens=4)
    names = [s.name for s in run.sequences]
    for frame in (memory.block_table_frame(run.snapshots[-1], names), memory.sequences_frame(run)):
        assert narrowest_px(frame) <= PHONE_COLUMN_PX, list(frame.columns)
