// kvlab's plain table: a read-only HTML <table> for the small tables of a first screen, where
// Streamlit's data grid would load about 1.5 MB of script; and, in its "stats" layout, a row of
// labelled figures (what st.metric showed) as a description list. Every text arrives decided
// (viz.figures.base) and is written with textContent; numeric columns are right-aligned.

function drawTable(data) {
  const table = document.createElement("table");
  table.className = data.presenter ? "plain presenter" : "plain";
  if (data.label) {
    const caption = document.createElement("caption");
    caption.textContent = data.label;
    table.appendChild(caption);
  }
  const head = table.createTHead().insertRow();
  data.columns.forEach((name, i) => {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = name;
    if (data.numeric[i]) th.className = "num";
    head.appendChild(th);
  });
  const body = table.createTBody();
  for (const row of data.rows) {
    const tr = body.insertRow();
    row.forEach((text, i) => {
      let cell;
      if (i === 0) {  // the first column names the row, for screen readers
        cell = document.createElement("th");
        cell.scope = "row";
        tr.appendChild(cell);
      } else {
        cell = tr.insertCell();
      }
      cell.textContent = text;
      if (data.numeric[i]) cell.className = "num";
    });
  }
  return table;
}

function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

const ARROWS = { up: "\u2191 ", down: "\u2193 " };

// Each stat is a <dt> label then its <dd>s: the value, the change ("up 1" for a screen reader, an
// arrow and "+1" on screen, green or red by whether that direction is good), the help.
function drawStats(data) {
  const list = element("dl", data.presenter ? "stats presenter" : "stats");
  for (const stat of data.stats) {
    const item = element("div", "stat");
    item.append(element("dt", "", stat.label), element("dd", "value", stat.value));
    if (stat.delta) {
      const delta = element("dd", `delta ${stat.delta.tone}`);
      const shown = element("span", "", (ARROWS[stat.delta.direction] || "") + stat.delta.text);
      shown.setAttribute("aria-hidden", "true");
      delta.append(shown, element("span", "sr", stat.delta.spoken));
      item.appendChild(delta);
    }
    if (stat.help) item.appendChild(element("dd", "help", stat.help));
    list.appendChild(item);
  }
  return list;
}

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
  if (!data) return;
  const stats = data.layout === "stats";
  let box = parentElement.querySelector(".kv-box");
  if (!box) {
    box = element("div", "kv-box");
    parentElement.appendChild(box);
  }
  box.className = stats ? "kv-box" : "kv-box plain-box";
  box.setAttribute("role", stats ? "group" : "region");
  box.setAttribute("aria-label", data.label || (stats ? "figures" : "table"));
  box.replaceChildren(stats ? drawStats(data) : drawTable(data));
  // a table wider than its box (a phone) scrolls sideways: then the keyboard can reach it too
  requestAnimationFrame(() => {
    if (!stats && box.scrollWidth > box.clientWidth) box.tabIndex = 0; else box.removeAttribute("tabindex");
  });
}
