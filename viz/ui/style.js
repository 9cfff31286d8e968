// kvlab's page style: the frame's CSS (caption contrast, the sidebar's width, presenter mode's type,
// its hidden lesson title and the tour's large answers) as one <style> element. The component is not isolated in a shadow root, so its style applies to the whole
// page; the CSS is the app's own, never visitor text, and is set with textContent.

export default function (component) {
  const { parentElement } = component;
  const data = Array.isArray(component.data) ? component.data[0] : null;  // see components._component
  if (!data) return;
  let style = parentElement.querySelector("style");
  if (!style) {
    style = document.createElement("style");
    parentElement.append(style);
  }
  if (style.textContent !== data.css) style.textContent = data.css;
}
