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
      const td = tr.insertCell();
      td.textContent = text;
      if (data.numeric[i]) td.className = "num";
    });
  }
  let box = parentElement.querySelector(".plain-box");
  if (!box) {
    box = document.createElement("div");
    box.className = "plain-box";
    box.tabIndex = 0;  // scrolls sideways on a phone, by keyboard too
    parentElement.appendChild(box);
  }
  box.setAttribute("aria-label", data.label || "table");
  box.setAttribute("role", "region");
  box.replaceChildren(table);
}
