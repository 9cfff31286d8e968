// kvlab's Copy link box: a read-only field with the link and a button that copies it. The link is
// set as the field's value (plain text). Clipboard API where the page may use it (https, localhost);
// elsewhere the field's text is selected and copied the old way, or left selected for Ctrl+C.

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
  if (!data) return;
  let box = parentElement.querySelector(".copy");
  if (!box) {
    box = document.createElement("div");
    box.className = "copy";
    const field = document.createElement("input");
    field.type = "text";
    field.readOnly = true;
    field.addEventListener("focus", () => field.select());
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Copy link";
    button.addEventListener("click", async () => {
      let done = false;
      try {
        if (navigator.clipboard && window.isSecureContext) {  // a browser may never answer: wait 1 s at most
          const late = new Promise((_, fail) => setTimeout(() => fail(new Error("no answer")), 1000));
          await Promise.race([navigator.clipboard.writeText(field.value), late]);
          done = true;
        }
      } catch (err) { done = false; }
      if (!done) {
        field.focus();
        field.select();
        try { done = document.execCommand("copy"); } catch (err) { done = false; }
        if (done) button.focus();  // copied: the arrow keys step the lesson again
      }
      const keys = /Mac|iPhone|iPad/.test(navigator.platform || "") ? "⌘C" : "Ctrl+C";
      button.textContent = done ? "Copied" : `Press ${keys}`;
      status.textContent = done ? "Link copied" : `The link is selected: press ${keys} to copy it`;
      setTimeout(() => { button.textContent = "Copy link"; status.textContent = ""; }, 1600);
    });
    const status = document.createElement("span");  // what the button did, read out by screen readers
    status.className = "status";
    status.setAttribute("role", "status");
    box.append(field, button, status);
    parentElement.append(box);
  }
  const field = box.querySelector("input");
  field.value = data.link;
  field.setAttribute("aria-label", data.label);
  field.title = data.link;
}
