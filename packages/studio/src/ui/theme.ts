/** Light and dark themes: CSS variables switched by `data-theme` on <html>, remembered per browser. */
export type Theme = "light" | "dark";

const KEY = "atomstudio.theme";

export const VIEWER_BACKGROUND: Record<Theme, string> = { light: "#ffffff", dark: "#1d1f23" };

export const initialTheme = (): Theme => {
  const saved = localStorage.getItem(KEY);
  if (saved === "light" || saved === "dark") return saved;
  return window.matchMedia?.("(prefers-color-scheme: dark)").matches ? "dark" : "light";
};

export const applyTheme = (theme: Theme, button: HTMLButtonElement, onViewer: (background: string) => void): void => {
  document.documentElement.dataset.theme = theme;
  localStorage.setItem(KEY, theme);
  button.setAttribute("aria-pressed", String(theme === "dark"));
  onViewer(VIEWER_BACKGROUND[theme]);
};
