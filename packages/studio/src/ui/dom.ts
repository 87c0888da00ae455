/**
 * The studio's one DOM builder: `h("button", { id: "run" }, "Run")`. Attributes are set as
 * given; children are appended in order, so a single string child is the element's text.
 * Empty strings add nothing, as setting textContent to "" on a new element would.
 */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const child of children) if (child !== "") el.append(child);
  return el;
};
