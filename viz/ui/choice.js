// kvlab's choice and switch: a row of pill buttons for one of N (role radiogroup, each a real
// <button> with role radio) and an on/off switch (a <button> with role switch), in the chunk every
// page already loads (Streamlit's baseui segmented controls, pills and toggles cost 20 to 25 ms of
// main-thread work each on a first view). The server is the authority: a render shows data.value
// unless the visitor has picked again since (each pick carries a number; a run that has not seen
// the latest leaves the visitor's pick shown; a new session behind the same page starts the count
// again). A group is one Tab stop; arrow keys move between its options and pick (or, where a pick
// costs something, as for the scenario, only move: Enter or Space picks), only while focus is inside
// the choice, so the page's ← → shortcuts work everywhere else. Every text (options may be head or
// scenario names) is written with textContent only.

const el = (tag, className) => {
  const node = document.createElement(tag);
  if (className) node.className = className;
  return node;
};

function build(parentElement, kind) {
  const box = el("div", kind);
  const id = "c" + Math.random().toString(36).slice(2);
  const described = el("span", "hidden");  // the help text, read out with the control
  described.id = id + "-help";
  if (kind === "switch") {
    const button = el("button", "toggle");
    button.type = "button";
    button.setAttribute("role", "switch");
    const track = el("span", "track");
    track.append(el("span", "thumb"));
    track.setAttribute("aria-hidden", "true");
    button.append(track, el("span", "text"));
    button.addEventListener("click", () => {
      const on = button.getAttribute("aria-checked") !== "true";
      button.setAttribute("aria-checked", String(on));  // at once; the server's answer follows
      box.__sent += 1;
      box.__component.setTriggerValue("flipped", { on, seq: box.__sent });
    });
    box.append(button, described);
  } else {
    const head = el("div", "head");
    const label = el("span", "label");
    label.setAttribute("aria-hidden", "true");  // the group is named by aria-label
    const help = el("span", "help");
    help.textContent = "?";
    help.setAttribute("aria-hidden", "true");
    head.append(label, help);
    const group = el("div", "options");
    group.setAttribute("role", "radiogroup");
    group.addEventListener("keydown", (event) => {
      const keys = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 };
      if (!(event.key in keys) || event.altKey || event.ctrlKey || event.metaKey) return;
      event.preventDefault();
      event.stopPropagation();  // inside the choice the arrows are the choice's, not the page's
      const buttons = [...group.querySelectorAll("button")];
      const at = buttons.indexOf(event.target.closest("button"));
      const next = buttons[(Math.max(at, 0) + keys[event.key] + buttons.length) % buttons.length];
      rove(group, next);
      next.focus();
      if (box.__arrowsPick) next.click();
    });
    box.append(head, group, described);
  }
  parentElement.append(box);
  return box;
}

// One Tab stop per group (the chosen option, or the first when none is): arrows move inside it.
function rove(group, focused) {
  group.querySelectorAll("button").forEach((b) => { b.tabIndex = b === focused ? 0 : -1; });
}

function pick(box, index) {
  const buttons = [...box.querySelectorAll(".options button")];
  buttons.forEach((b, i) => b.setAttribute("aria-checked", String(i === index)));
  rove(box.querySelector(".options"), buttons[index] || buttons[0]);
}

function drawOptions(box, data) {
  const group = box.querySelector(".options");
  const options = JSON.stringify(data.options);
  if (box.__options === options) return false;
  box.__options = options;
  group.replaceChildren(...data.options.map((text, index) => {
    const button = el("button", "option");
    button.type = "button";
    button.setAttribute("role", "radio");
    button.setAttribute("aria-checked", "false");
    button.textContent = text;
    button.addEventListener("click", () => {
      if (button.getAttribute("aria-checked") === "true") return;  // already the one chosen
      pick(box, index);  // at once; the server's answer follows
      box.__picked = index;
      box.__sent += 1;
      box.__component.setTriggerValue("picked", { index, seq: box.__sent });
    });
    return button;
  }));
  return true;
}

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
  if (!data) return;
  const kind = data.kind === "switch" ? "switch" : "choice";
  let box = parentElement.querySelector(`.${kind}`);
  if (!box) box = build(parentElement, kind);
  if (box.__session !== data.session) {  // drawn again, or a new session behind the same page
    box.__session = data.session;
    box.__sent = data.seen ?? 0;  // go on from the picks the session has handled
  }
  box.__component = component;  // the latest render's trigger (it knows the fragment that reruns)
  box.className = [kind, data.presenter && "presenter", data.label_visible && "labelled"].filter(Boolean).join(" ");
  const described = box.querySelector(".hidden");
  described.textContent = data.help || "";
  const caughtUp = (data.seen ?? 0) >= box.__sent;  // the server has handled the latest pick
  let control;
  if (kind === "switch") {
    control = box.querySelector("button");
    control.querySelector(".text").textContent = data.label;
    if (caughtUp) control.setAttribute("aria-checked", String(Boolean(data.value)));
  } else {
    control = box.querySelector(".options");
    control.setAttribute("aria-label", data.label);
    box.querySelector(".label").textContent = data.label;
    const help = box.querySelector(".help");
    help.hidden = !data.help;
    help.title = data.help || "";
    box.__arrowsPick = data.arrows_pick !== false;
    if (drawOptions(box, data) || caughtUp) pick(box, caughtUp ? data.value : box.__picked);
  }
  control.title = data.help || "";
  if (data.help) control.setAttribute("aria-describedby", described.id);
  else control.removeAttribute("aria-describedby");
}
