"""Tier 1: viz.ui.common.column_px, the width a figure is fitted to, against the widths Chromium draws.

Measured 2026-11-26 with Playwright in Debian's Chromium (Streamlit 1.67, kvlab's frame: wide layout,
the 400-px sidebar at a desk, presenter mode's CSS and folded sidebar at 1280 × 720): a small app of
``st.columns(n, gap=...)`` rows, each column holding a keyed container whose getBoundingClientRect()
width was read. Main column 880 px at 1440 × 900 and 1096.4 px in presenter mode at 1280 × 720.
Columns (px):            half, small gap   half, medium   third, small   third, medium
  desk 1440 × 900            432              424           282.7            272
  presenter 1280 × 720       539              529.8         353.2            341
(and (1.3, 1, 0.7) columns: 370.7 / 282.7 / 194.7 at a desk, 462.9 / 353.2 / 243.6 in presenter mode).
"""

from __future__ import annotations

import pytest

from viz.ui import common, state

MEASURED = {  # (presenter, share): the narrowest column of that share measured (the medium gap's)
    (False, 1.0): 880, (False, 1 / 2): 424, (False, 1 / 3): 272, (False, 1.3 / 3): 370.7,
    (True, 1.0): 1096.4, (True, 1 / 2): 529.8, (True, 1 / 3): 341, (True, 1.3 / 3): 462.9,
}


@pytest.mark.parametrize("presenter, share", list(MEASURED))
def test_a_columns_guessed_width_is_never_wider_than_chromiums(monkeypatch, presenter, share):
    """The guess fits the column Chromium draws (a wider guess gave a legend too few rows, which
    clipped it), and stays within a tenth of it (a figure fitted far too narrow wastes its column)."""
    monkeypatch.setattr(state, "presenter", lambda: presenter)
    real = MEASURED[presenter, share]
    assert 0.9 * real <= common.column_px(share) <= real
