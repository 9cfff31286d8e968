"""Tier 3 (browser): the sliders (Streamlit's st.select_slider for Prefill's position on a longer
prompt, its chips on a short one, st.slider for Decode's timeline) as a visitor uses them: the position stepped with the keyboard, the timeline
dragged with the mouse and stepped with a key. Each move reruns once and the page follows; the input
is named by its label and says its value's text. With the slider focused an arrow key is the
lesson's key (viz/ui/board/README.md): it presses the button beside it and the slider does not move
on its own, so a key moves one step, not two."""

from __future__ import annotations

from playwright.sync_api import expect

from viz import load_preset
from viz.core.engine.share import View, encode_view


def press(app, key: str, slider, param: str, value: str, text: str) -> None:
    """Press a key while the slider has the focus: after the one rerun it starts, the link's
    ``param`` and the slider's valuetext say the new value."""
    with app.rerun():
        app.page.keyboard.press(key)
    assert app.query.get(param) == value
    expect(slider).to_have_attribute("aria-valuetext", text)


def test_arrow_keys_on_the_position_range_step_prefill(app):
    """ArrowRight on the focused position slider moves the query position by one, ArrowLeft back;
    its accessible name is "Step · query position" and its valuetext "i · token". (A prompt of nine
    tokens: Prefill offers up to six positions as chips, below.)"""
    app.open("/prefill", **encode_view(View(load_preset("previous-token"), position=2)))
    position = app.main.get_by_role("slider", name="Step · query position")
    expect(position).to_have_attribute("aria-valuetext", "2 · cat")
    position.focus()
    app.screenshot("range-prefill-focused")
    press(app, "ArrowRight", position, "pos", "3", "3 · sat")
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text("sat (position 3) sees")
    press(app, "ArrowLeft", position, "pos", "2", "2 · cat")  # back to a value it held before
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text("cat (position 2) sees")
    app.assert_no_exception()


def test_a_short_prompts_positions_are_chips_in_a_row(app):
    """The seed's four positions are chips named "i · token" after ← and →, on one line; a click
    on one moves there (one rerun, the link follows); → and a lesson key step from it, the chosen chip
    following."""
    app.open("/prefill", **encode_view(View(load_preset("seed"), position=2)))
    group = app.main.get_by_role("radiogroup", name="Step · query position", exact=True)
    chips = group.get_by_role("radio")
    expect(chips).to_have_count(4)
    assert [chip.inner_text() for chip in chips.all()] == ["1 · Today", "2 · weather", "3 · is", "4 · so"]
    expect(group.get_by_role("radio", name="2 · weather")).to_have_attribute("aria-checked", "true")
    row = [app.main.locator(f".st-key-prefill_position_{side} button").first.bounding_box() for side in ("back", "forward")]
    row.append(group.bounding_box())
    middles = [box["y"] + box["height"] / 2 for box in row]
    assert max(middles) - min(middles) <= 12, row  # ←, → and the chips on one line at a desk
    with app.rerun():
        group.get_by_role("radio", name="4 · so").click()
    assert app.query.get("pos") == "4"
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text("so (position 4) sees")
    with app.rerun():
        app.page.keyboard.press("ArrowLeft")  # a lesson key, the chip focused: ← steps back
    assert app.query.get("pos") == "3"
    expect(group.get_by_role("radio", name="3 · is")).to_have_attribute("aria-checked", "true")
    app.screenshot("range-prefill-chips")
    app.assert_no_exception()


def test_dragging_the_timeline_scrubs_decode(app):
    """Dragging the timeline's thumb to the middle of 0–4 shows step 2; a key then steps it; the
    timeline is named "Timeline (tokens generated)" and says "k of 4"."""
    app.open("/decode", **encode_view(View(load_preset("seed"), step=4)))
    timeline = app.main.get_by_role("slider", name="Timeline (tokens generated)")
    expect(timeline).to_have_attribute("aria-valuetext", "4 of 4")
    thumb = timeline.locator("xpath=..").bounding_box()  # the range input sits inside its thumb
    track = app.main.get_by_test_id("stSlider").filter(
        has=app.page.get_by_role("slider", name="Timeline (tokens generated)")).bounding_box()
    middle = thumb["y"] + thumb["height"] / 2
    app.page.mouse.move(thumb["x"] + thumb["width"] / 2, middle)  # the thumb, at the right end
    app.page.mouse.down()
    app.page.mouse.move(track["x"] + track["width"] / 2, middle, steps=5)
    with app.rerun():
        app.page.mouse.up()
    assert app.query.get("step") == "2"
    expect(timeline).to_have_attribute("aria-valuetext", "2 of 4")
    expect(app.main.get_by_test_id("stAlertContentInfo").first).to_contain_text("Step 2:")
    press(app, "ArrowRight", timeline, "step", "3", "3 of 4")  # the thumb kept the focus through the rerun
    app.assert_no_exception()
    app.screenshot("range-decode-timeline")
