// kvlab's range: a label, the current value's text and a native <input type="range"> in the chunk
// every page already loads (Streamlit's own slider brings a script chunk of its own to a first view).
// The server is the authority: a render shows data.value, the value its run decided, unless the
// visitor has moved on since (keys pressed quickly: each move carries a number, and a run that has
// not seen the latest move leaves the thumb where the visitor put it). Dragging (or a key) shows
// each value's text at once; on release, or on each keyboard step, the value is sent as a trigger
// ("moved"), so moving back to a value seen before still reruns. Visitor text (a label may quote a
// token) is written with textContent only.

const el = (tag, className) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  return node;
};

function build(parentElement) {
  const box = el("div", "range");
  const head = el("div", "head");
  const label = el("label", "label");
  label.htmlFor = "kvlab-range";
  const help = el("span", "help");
  help.textContent = "?";
  help.setAttribute("aria-hidden", "true");
  const value = el("span", "value");  // what the input's aria-valuetext says, for the eye
  value.setAttribute("aria-hidden", "true");
  head.append(label, help, value);
  const input = el("input", "");
  input.type = "range";
  input.id = "kvlab-range";
  input.step = "1";
  const described = el("span", "hidden");  // the help text, read out with the input
  described.id = "kvlab-range-help";
  box.append(head, input, described);
  parentElement.append(box);

  const show = () => {  // the text and the filled part of the track for the value under the thumb
    const data = box.__data;
    const at = Number(input.value);
    const text = data.labels[at - data.min] ?? String(at);
    value.textContent = text;
    input.setAttribute("aria-valuetext", text);
    const span = data.max - data.min;
    input.style.setProperty("--fill", `${span > 0 ? ((at - data.min) / span) * 100 : 0}%`);
  };
  input.addEventListener("input", show);
  // box.__sent: the number of the latest move sent; data.seen: of the latest the server handled
  input.addEventListener("change", () => {
    box.__sent += 1;
    box.__component.setTriggerValue("moved", { to: Number(input.value), seq: box.__sent });
  });
  box.__show = show;
  return box;
}

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
  if (!data) return;
  let box = parentElement.querySelector(".range");
  if (!box) box = build(parentElement);
  if (box.__session !== data.session) {  // drawn again, or a new session behind the same page
    box.__session = data.session;
    box.__sent = data.seen ?? 0;  // go on from the moves the session has handled
  }
  box.__data = data;
  box.__component = component;  // the latest render's trigger (it knows the fragment that reruns)
  box.className = ["range", data.presenter && "presenter", data.inline && "inline"].filter(Boolean).join(" ");
  const input = box.querySelector("input");
  box.querySelector(".label").textContent = data.label;
  const help = box.querySelector(".help");
  const described = box.querySelector(".hidden");
  help.hidden = !data.help;
  help.title = data.help || "";
  described.textContent = data.help || "";
  input.title = data.help || "";  // on hover, also where the label is hidden (inline)
  if (data.help) input.setAttribute("aria-describedby", described.id);
  else input.removeAttribute("aria-describedby");
  input.min = String(data.min);
  input.max = String(data.max);
  if ((data.seen ?? 0) >= box.__sent) input.value = String(data.value);  // the server has caught up
  input.disabled = data.min >= data.max;
  box.__show();
}
