// kvlab's lesson board (README.md): draws one spec from viz/figures/board.py (a matrix or a bar chart).
// Every number, colour and hover line arrives decided; this only lays them out. Visitor text is
// written with textContent (never as markup). Streamlit calls the default export on every render
// with the new spec; the board is built anew and swapped in with one replaceWith, a few milliseconds.

const el = (tag, className, text) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
};

function legend(items) {
  const box = el("div", "legend");
  for (const item of items) {
    const entry = el("span", "entry");
    const swatch = el("span", item.fill ? "swatch fill" : "swatch");
    swatch.style.setProperty("--c", item.color);
    entry.append(swatch, el("span", "", item.label));
    box.append(entry);
  }
  return box;
}

function matrix(spec) {
  const cols = spec.columns.length;
  const grid = el("div", "grid");
  grid.style.gridTemplateColumns = `minmax(3.5em, max-content) repeat(${cols}, minmax(0, 1fr))`;
  const firstRow = [];  // grid row (1-based) where each group starts
  const sizes = [];  // each grid row's height
  let line = 1;
  spec.groups.forEach((group, g) => {
    if (g > 0) {  // an empty grid row between groups (the keys and the values)
      sizes.push("6px");
      line += 1;
    }
    firstRow.push(line);
    for (const row of group.rows) {
      const label = el("div", "rowlabel", row.label);
      label.title = row.label;
      label.style.gridRow = line;
      grid.append(label);
      row.cells.forEach((cell, c) => {
        const box = el("div", "cell", cell.text);
        box.style.background = cell.bg;
        box.style.color = cell.fg;
        box.style.gridRow = line;
        box.style.gridColumn = c + 2;
        box.title = cell.tip;
        if (spec.gap_after === c) box.classList.add("gap");
        grid.append(box);
      });
      sizes.push("var(--cell)");
      line += 1;
    }
  });
  spec.columns.forEach((name, c) => {
    const tick = el("div", "tick");
    tick.style.gridRow = line;
    tick.style.gridColumn = c + 2;
    const text = el("span", "", name);
    tick.title = name;
    tick.append(text);
    grid.append(tick);
  });
  sizes.push("var(--ticks)");
  grid.style.gridTemplateRows = sizes.join(" ");
  for (const o of spec.outlines) {
    const rows = spec.groups[o.group].rows.length;
    const top = firstRow[o.group] + (o.row === null ? 0 : o.row);
    const ring = el("div", "ring");
    ring.style.gridRow = `${top} / span ${o.row === null ? rows : 1}`;
    ring.style.gridColumn = o.col === null ? "2 / -1" : `${o.col + 2} / span 1`;
    ring.style.setProperty("--c", o.color);
    grid.append(ring);
  }
  return grid;
}

function bars(spec) {
  const box = el("div", spec.wrap_labels ? "bars wrap" : "bars");
  for (const bar of spec.bars) {
    const label = el("div", "barlabel", bar.label);
    label.title = bar.tip;
    const track = el("div", "track");
    track.title = bar.tip;
    // one fill, or stacked segments (each with its own tooltip); 80 %: room for the number after it
    for (const part of bar.segments || [bar]) {
      const fill = el("div", "fill");
      fill.style.width = `${(part.share * 80).toFixed(2)}%`;
      fill.style.background = part.color;
      if (part.tip) fill.title = part.tip;
      track.append(fill);
    }
    track.append(el("span", "value", bar.text));
    box.append(label, track);
  }
  box.append(el("div", ""), el("div", "axis", spec.axis));
  return box;
}

function draw(parentElement, data) {
  const figure = el("figure", data.presenter ? "board presenter" : "board");
  figure.setAttribute("role", "group");
  figure.setAttribute("aria-label", data.label);
  const head = el("div", "head");  // the title, and the legend beside it where there is room
  head.append(el("figcaption", "title", data.title));
  if (data.legend && data.legend.length) head.append(legend(data.legend));
  figure.append(head, data.kind === "bars" ? bars(data) : matrix(data));
  const old = parentElement.querySelector("figure.board");
  if (old) old.replaceWith(figure); else parentElement.append(figure);
  performance.mark("kvlab:board");  // for python -m viz.tools.paint: when a board was redrawn
}

// Where a key press is typing, not a shortcut: as Streamlit decides for its own shortcuts, from the
// event's composed path (a field inside a component's shadow root counts too); and inside a radio
// group, whose arrow keys move between its options.
const TYPING = new Set(["INPUT", "TEXTAREA", "SELECT"]);
const typing = event => (event.composedPath ? event.composedPath() : [event.target]).some(
  node => node && node.tagName && (TYPING.has(node.tagName) || node.isContentEditable
                                   || node.getAttribute("role") === "radiogroup"));

// The turns of one board: a click on a turn's button (not disabled) or its key (no modifier, not
// typing) draws the turn's spec at once. One turn per render: after it, the board waits for the
// rerun the click started, which renders the board again (each render carries a new run number, so
// it always redraws from the server's data). Listeners are replaced on every render, removed on unmount.
function listen(parentElement, data) {
  if (parentElement.__kvlabOff) parentElement.__kvlabOff();
  const turns = data.turns || [];
  if (!turns.length) { parentElement.__kvlabOff = null; return () => {}; }
  const drawn = turn => { off(); draw(parentElement, { ...turn.spec, presenter: data.presenter }); };
  const onClick = event => {
    for (const turn of turns) {
      const button = event.target.closest && event.target.closest(turn.selector);
      if (button && !button.disabled) return drawn(turn);
    }
  };
  const onKey = event => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || typing(event)) return;
    for (const turn of turns) {
      const button = document.querySelector(turn.selector);
      if (event.key === turn.key && button && !button.disabled) return drawn(turn);
    }
  };
  document.addEventListener("click", onClick, true);
  document.addEventListener("keydown", onKey, true);
  function off() {
    document.removeEventListener("click", onClick, true);
    document.removeEventListener("keydown", onKey, true);
    if (parentElement.__kvlabOff === off) parentElement.__kvlabOff = null;
  }
  parentElement.__kvlabOff = off;
  return off;
}

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // README.md: the data contract
  if (!data) return;
  draw(parentElement, data);
  return listen(parentElement, data);
}
