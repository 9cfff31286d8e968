// kvlab's plain table: a read-only HTML <table> for the small tables of a first screen, where
// Streamlit's data grid would load about 1.5 MB of script. Every cell arrives as decided text and is
// written with textContent; numeric columns are right-aligned.

export default function (component) {
  const { data, parentElement } = component;
  if (!data) return;
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
  let box = parentElement.querySelector(".plain-box");
  if (!box) {
    box = document.createElement("div");
    box.className = "plain-box";
    parentElement.appendChild(box);
  }
  box.setAttribute("aria-label", data.label || "table");
  box.setAttribute("role", "region");
  box.replaceChildren(table);
  // a table wider than its box (a phone) scrolls sideways: then the keyboard can reach it too
  requestAnimationFrame(() => {
    if (box.scrollWidth > box.clientWidth) box.tabIndex = 0; else box.removeAttribute("tabindex");
  });
}
