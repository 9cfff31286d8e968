"""FlashAttention's tile grid in presenter mode's lesson column (1280 × 720, a teacher's review: a 215 ×
255-px grid in a 450-px column, 6-px cells, turned key labels running into each other): the grid takes
its column's width, its labels are 16 px, level for the keys, and every label shown has room of its own."""

from __future__ import annotations

from viz import load_preset
from viz.core.engine.presets import sequence
from viz.core.serving.flash import flash_attention
from viz.figures.base import PRESENTER_PX, fit, font_sizes
from viz.figures.flash import ROW_EM, SIDE_EM, TILES_PX, flash_tiles_figure
from viz.figures.room import LABEL_CHAR_EM

TEXT_PX = font_sizes(True).text
COLUMN_PX = int(PRESENTER_PX * 0.68 - 37)  # the lesson's column beside the controls (viz.ui.common.column_px)


def test_the_tile_grid_fills_a_projectors_column_with_labels_that_never_touch():
    scenario = load_preset("cache-safe")
    for n in (8, 32, 64):
        tokens, values = sequence(scenario, n)
        run = flash_attention(scenario, 8, 8, tokens=tokens, values=values)
        fig = fit(flash_tiles_figure(run, 0, 0, "first", plot_px=TILES_PX[True], width_px=COLUMN_PX, text_px=TEXT_PX),
                  width=COLUMN_PX, presenter=True)
        x, y = fig.layout.xaxis, fig.layout.yaxis
        assert min(x.tickfont.size, y.tickfont.size, fig.layout.legend.font.size) >= 16, n
        assert not x.tickangle, n  # level: turned labels ran into each other
        grid_px = COLUMN_PX - SIDE_EM * TEXT_PX  # what the labels and the colour bar leave the cells
        assert grid_px >= 0.65 * COLUMN_PX
        keys, queries = list(x.tickvals), list(y.tickvals)
        assert keys[0] == "1" and queries[0].startswith("1 · ")
        every_key = int(keys[1]) - 1 if len(keys) > 1 else n
        every_query = int(queries[1].split(" · ")[0]) - 1 if len(queries) > 1 else n
        widest = max(len(k) for k in keys) * TEXT_PX * LABEL_CHAR_EM
        assert every_key * grid_px / n >= widest + TEXT_PX * 0.5, n  # a gap between level key labels
        cell = min(30, TILES_PX[True] // n)
        assert every_query * cell >= ROW_EM * TEXT_PX - 1, n  # query labels a line apart
