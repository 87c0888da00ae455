/**
 * Keyboard shortcuts: one table drives both the key handling and the help dialog, so the help
 * never lists a shortcut that does not exist.
 */
export interface Shortcut {
  /** What the help dialog shows. */
  keys: string;
  does: string;
  matches: (e: KeyboardEvent) => boolean;
  run: () => void;
}

const mod = (e: KeyboardEvent): boolean => e.ctrlKey || e.metaKey;

export const shortcutTable = (actions: {
  undo: () => void;
  redo: () => void;
  deleteSelection: () => boolean;
  selectAll: () => void;
  escape: () => void;
  toggleMeasure: () => void;
  help: () => void;
}): Shortcut[] => [
  { keys: "Ctrl+Z", does: "Undo", matches: (e) => mod(e) && !e.shiftKey && e.key.toLowerCase() === "z", run: actions.undo },
  {
    keys: "Ctrl+Shift+Z, Ctrl+Y",
    does: "Redo",
    matches: (e) => mod(e) && ((e.shiftKey && e.key.toLowerCase() === "z") || e.key.toLowerCase() === "y"),
    run: actions.redo,
  },
  { keys: "Ctrl+A", does: "Select every atom", matches: (e) => mod(e) && e.key.toLowerCase() === "a", run: actions.selectAll },
  {
    keys: "Delete, Backspace",
    does: "Delete the selected atoms",
    matches: (e) => !mod(e) && (e.key === "Delete" || e.key === "Backspace"),
    run: () => void actions.deleteSelection(),
  },
  { keys: "Esc", does: "Clear the selection, end measure mode", matches: (e) => e.key === "Escape", run: actions.escape },
  {
    keys: "M",
    does: "Measure mode on or off",
    matches: (e) => !mod(e) && e.key.toLowerCase() === "m",
    run: actions.toggleMeasure,
  },
  { keys: "?", does: "This help", matches: (e) => e.key === "?", run: actions.help },
];

/** Listen on the document; keys typed into fields, dialogs and the assistant are theirs. */
export const bindShortcuts = (table: Shortcut[]): void => {
  document.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement;
    if (t.closest("input, textarea, select, [contenteditable], dialog, #assistant-panel")) return;
    const hit = table.find((s) => s.matches(e));
    if (!hit) return;
    e.preventDefault();
    hit.run();
  });
};

export const renderShortcutHelp = (tbody: HTMLElement, table: Shortcut[]): void => {
  tbody.replaceChildren(
    ...table.map((s) => {
      const tr = document.createElement("tr");
      const keys = document.createElement("td");
      for (const [i, k] of s.keys.split(", ").entries()) {
        if (i) keys.append(" or ");
        const kbd = document.createElement("kbd");
        kbd.textContent = k;
        keys.append(kbd);
      }
      const does = document.createElement("td");
      does.textContent = s.does;
      tr.append(keys, does);
      return tr;
    }),
  );
};
