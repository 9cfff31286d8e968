// kvlab's text field: a labelled one-line input whose text is sent when the visitor presses Enter
// (not while an input method is composing) or leaves the field after a change, as Streamlit's own
// text input does. It is sent as a trigger, so a text sent again (a refused edit tried again) still
// reaches the server. The server is the authority: the field shows data.value whenever that value
// changes, and otherwise leaves what the visitor is typing alone. A refusal's message is read out
// with the field (and announced when it comes). Every text is set with textContent or as the
// input's value.

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
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
    const problem = document.createElement("span");  // the refusal, for screen readers (shown below the field)
    problem.className = "hidden";
    problem.id = id + "-problem";
    problem.setAttribute("aria-live", "polite");
    input.setAttribute("aria-describedby", `${problem.id} ${hint.id}`);
    const send = () => {
      if (input.value === box.sent) return;  // Enter, then leaving the field: sent once
      box.sent = input.value;
      box.trigger("submitted", input.value);
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.isComposing && event.keyCode !== 229) send();
    });
    input.addEventListener("change", send);
    input.addEventListener("input", () => { box.sent = undefined; });  // an edit may be sent again
    box.append(label, input, hint, problem);
    parentElement.append(box);
  }
  box.trigger = component.setTriggerValue;
  box.sent = undefined;  // the server has answered: any text may be sent again
  const input = box.querySelector("input");
  box.querySelector("label").textContent = data.label;
  box.querySelector(".hint").textContent = data.help || "";
  box.querySelector(".hidden").textContent = data.error || "";
  input.maxLength = data.max_chars;
  if (data.value !== box.shown) {  // a new value from the server (an edit applied, a preset loaded)
    box.shown = data.value;
    input.value = data.value;
  }
  input.setAttribute("aria-invalid", data.error ? "true" : "false");
}
