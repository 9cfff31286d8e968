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
    // a filled swatch, an outlined one, or a wide one that runs through a colour scale (a gradient)
    const swatch = el("span", `swatch${item.fill ? " fill" : ""}${item.wide ? " wide" : ""}`);
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
        if (cell.gap) box.classList.add("gapkeys");  // stands for keys left out of the window, not a key
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

// A phone's step bar over the board (board.css shows it on a screen under 641 px only): each button
// presses the page's own (not when that one is disabled), so the click is the page's ordinary Step or
// Back, drawn at once by the turns below. On a phone the controls, the narration and the choices stack
// above the board; the bar keeps Step and the figure it changes on one screen.
function stepBar(steps) {
  const bar = el("div", "steps");
  for (const step of steps) {
    const button = el("button", step.primary ? "step primary" : "step", step.label);
    button.type = "button";
    button.disabled = step.disabled;
    button.addEventListener("click", () => {
      const target = find(step.selector);
      if (target && !target.disabled) target.click();
    });
    bar.append(button);
  }
  return bar;
}

function draw(parentElement, data) {
  const figure = el("figure", data.presenter ? "board presenter" : "board");
  figure.setAttribute("role", "group");
  figure.setAttribute("aria-label", data.label);
  if (data.steps && data.steps.length) figure.append(stepBar(data.steps));
  const head = el("div", "head");  // the title, and the legend beside it where there is room
  head.append(el("figcaption", "title", data.title));
  if (data.legend && data.legend.length) head.append(legend(data.legend));
  figure.append(head, data.kind === "bars" ? bars(data) : matrix(data));
  const old = parentElement.querySelector("figure.board");
  if (old) old.replaceWith(figure); else parentElement.append(figure);
  performance.mark("kvlab:board");  // for python -m viz.tools.paint: when a board was redrawn
}

// The turns of one board: a click on a turn's button (not disabled) draws the turn's spec at once;
// a lesson key presses that button (below), so it draws through the same click. One turn per render:
// after it, the board waits for the rerun the click started, which renders the board again (each
// render carries a new number, so it always redraws from the server's data). The listener is
// replaced on every render, removed on unmount.
function listen(parentElement, data) {
  if (parentElement.__kvlabOff) parentElement.__kvlabOff();
  const turns = data.turns || [];
  if (!turns.length) { parentElement.__kvlabOff = null; return () => {}; }
  const onClick = event => {
    for (const turn of turns) {
      const button = event.target.closest && event.target.closest(turn.selector);
      if (button && !button.disabled) {
        off();
        return draw(parentElement, { ...turn.spec, presenter: data.presenter, steps: data.steps });
      }
    }
  };
  document.addEventListener("click", onClick, true);
  function off() {
    document.removeEventListener("click", onClick, true);
    if (parentElement.__kvlabOff === off) parentElement.__kvlabOff = null;
  }
  parentElement.__kvlabOff = off;
  return off;
}

// The lesson's keys (README.md, "Keys"). ONE keydown listener for the page, on window in the capture
// phase, so it runs before the focused widget: a lesson key presses its step control's button
// (button.click(), not when disabled) and the event goes no further, so a focused choice never moves.
// While the visitor types in a text field, arrows and Space are text (only PageUp/PageDown step); in
// the sidebar (the scenario's editor) arrows and Space keep their own meaning; at a desk a focused
// slider keeps its arrows; at the first or last step, with no control focused, the key does what it
// would anyway (the page scrolls). A key held down steps once. Each mounted keys element registers its map here; a key goes
// to the step control clicked last, if it is still shown, else to the first shown on the page.
const TEXT = new Set(["INPUT", "TEXTAREA", "SELECT"]);
const NOT_TEXT = new Set(["checkbox", "radio", "button", "submit", "reset", "range", "color", "file", "image"]);
const ALWAYS = new Set(["PageUp", "PageDown"]);
const path = event => (event.composedPath ? event.composedPath() : [event.target]);
const typing = event => path(event).some(node => node && node.tagName && (node.isContentEditable
  || (TEXT.has(node.tagName) && !(node.tagName === "INPUT" && NOT_TEXT.has(node.type)))));
const inSidebar = event => path(event).some(
  node => node && node.getAttribute && node.getAttribute("data-testid") === "stSidebar");
// focus on a control (a button, an input, a slider's thumb, a radio, a tab), not on the page itself
const CONTROL_ROLES = new Set(["slider", "radio", "radiogroup", "option", "tab", "switch", "checkbox"]);
const onControl = event => path(event).some(node => node && node.getAttribute
  && (node.tagName === "INPUT" || node.tagName === "BUTTON" || CONTROL_ROLES.has(node.getAttribute("role"))));
const onSlider = event => path(event).some(node => node && node.getAttribute
  && (node.getAttribute("role") === "slider" || (node.tagName === "INPUT" && node.type === "range")));
const ARROWS = new Set(["ArrowLeft", "ArrowRight"]);
// a step control's button as drawn (Streamlit keeps a second, undrawn copy of a button with help)
const find = selector => [...document.querySelectorAll(selector)].find(button => button.getClientRects().length > 0);

function keyboard() {
  if (window.__kvlabKeys) return window.__kvlabKeys;
  const keys = { maps: new Map(), last: null, swallowSpace: false, presenter: false };
  const ordered = () => [...keys.maps.entries()]  // [element, map] in page order
    .filter(([element]) => element.isConnected)
    .sort(([a], [b]) => (a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1));
  const target = key => {
    const maps = ordered().map(([, map]) => map).filter(map => map[key] && find(map[key]));
    const last = maps.find(map => Object.values(map).includes(keys.last));
    return (last || maps[0] || {})[key];
  };
  window.addEventListener("keydown", event => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey || event.isComposing) return;
    const selector = target(event.key);
    if (!selector) return;
    if (!ALWAYS.has(event.key) && (typing(event) || inSidebar(event))) return;
    // at a desk a focused slider keeps its arrows (keyboard users set it with them); a projector's
    // keys always step
    if (!keys.presenter && ARROWS.has(event.key) && onSlider(event)) return;
    const button = find(selector);
    // at the first or last step the key does what it would do anyway (the page scrolls), unless a
    // control has focus, which it would move
    if (button.disabled && !onControl(event)) return;
    event.preventDefault();
    event.stopPropagation();
    if (event.key === " ") keys.swallowSpace = true;  // a focused button acts on Space's keyup
    if (!event.repeat && !button.disabled) button.click();
  }, true);
  window.addEventListener("keyup", event => {
    if (event.key !== " " || !keys.swallowSpace) return;
    keys.swallowSpace = false;
    event.preventDefault();
    event.stopPropagation();
  }, true);
  window.addEventListener("click", event => {  // the step control used last takes the keys
    for (const map of keys.maps.values()) {
      for (const selector of Object.values(map)) {
        if (event.target.closest && event.target.closest(selector)) { keys.last = selector; return; }
      }
    }
  }, true);
  window.__kvlabKeys = keys;
  return keys;
}

function register(parentElement, map, presenter) {
  const keys = keyboard();
  const { maps } = keys;
  keys.presenter = Boolean(presenter);  // every render says whether the page is in presenter mode
  maps.set(parentElement, map);
  return () => { if (maps.get(parentElement) === map) maps.delete(parentElement); };
}

// Presenter mode folds the sidebar and unfolds it on exit (README.md, "The sidebar"). Streamlit keeps
// a sidebar the visitor folded or unfolded by hand as it was, over the page's initial state (its
// browser remembers the choice), so the app sends this form in the run where presenter mode turns on
// or off: on, an open sidebar is folded as its « button folds it; off, a sidebar folded here is
// unfolded as the » button unfolds it. A sidebar the visitor opened in presenter mode stays open.
function foldSidebar(fold) {
  const sidebar = document.querySelector('[data-testid="stSidebar"]');
  if (!sidebar) return;
  const open = sidebar.getAttribute("data-collapsed") === "false";
  if (fold && open) {
    const button = sidebar.querySelector('[data-testid="stSidebarCollapseButton"] button');
    if (button) { button.click(); window.__kvlabFolded = true; }
  } else if (!fold && !open && window.__kvlabFolded) {
    const button = document.querySelector('[data-testid="stExpandSidebarButton"]');
    if (button) button.click();
    window.__kvlabFolded = false;
  }
}

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // README.md: the data contract
  if (!data) return;
  if (data.kind === "keys") return register(parentElement, data.keys, data.presenter);  // keys only: nothing drawn
  if (data.kind === "sidebar") return foldSidebar(data.fold);  // nothing drawn
  // the same data as the board on screen (a render without turns, whose draw number stays 0): keep it,
  // so a hover or a selection survives a rerun that changed nothing (a following student's poll)
  const sent = JSON.stringify(data);
  if (parentElement.__kvlabSent !== sent || !parentElement.querySelector("figure.board")) draw(parentElement, data);
  parentElement.__kvlabSent = sent;
  return listen(parentElement, data);
}
