// kvlab's text field: a labelled one-line input whose text is sent when the visitor presses Enter
// or leaves the field (as Streamlit's own text input does), as a trigger, so the same text sent
// twice (a refused edit tried again) still reaches the server. The server is the authority: the
// field shows data.value from the latest run whenever that value changes, and otherwise leaves
// what the visitor is typing alone. Every text is set with textContent or as the input's value.

export default function (component) {
  const { data, parentElement } = component;
  if (!data) return;
  let box = parentElement.querySelector(".field");
  if (!box) {
    box = document.createElement("div");
    box.className = "field";
    const id = "f" + Math.random().toString(36).slice(2);
    const label = document.createElement("label");
    label.htmlFor = id;
    const input = document.createElement("input");
    input.type = "text";
    input.id = id;
    input.autocomplete = "off";
    input.spellcheck = false;
    const hint = document.createElement("div");
    hint.className = "hint";
    hint.id = id + "-hint";
    input.setAttribute("aria-describedby", hint.id);
    const send = () => {
      if (input.value === box.sent) return;  // Enter, then leaving the field: sent once
      box.sent = input.value;
      box.trigger("submitted", input.value);
    };
    input.addEventListener("keydown", (event) => { if (event.key === "Enter") send(); });
    input.addEventListener("change", send);
    input.addEventListener("focus", () => { box.sent = undefined; });  // each visit may send again
    box.append(label, input, hint);
    parentElement.append(box);
  }
  box.trigger = component.setTriggerValue;
  const input = box.querySelector("input");
  box.querySelector("label").textContent = data.label;
  box.querySelector(".hint").textContent = data.help || "";
  if (data.value !== box.shown) {  // a new value from the server (an edit applied, a preset loaded)
    box.shown = data.value;
    input.value = data.value;
  }
  input.setAttribute("aria-invalid", data.invalid ? "true" : "false");
  box.classList.toggle("presenter", !!data.presenter);
}
