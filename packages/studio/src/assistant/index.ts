/**
 * The chat assistant panel (mounted by main.ts into #assistant-panel, packages/studio/README.md).
 * Plain DOM: a provider and model picker, the conversation, an input with Send and Stop. Model
 * output is only ever set as text (never as HTML).
 */
import { apiFetch } from "../auth.ts";
import type { StudioApi } from "../studio.ts";
import "./assistant.css";
import { AssistantSession, loadProviders, type ProviderInfo, type SessionCallbacks } from "./session.ts";
import type { ToolOutcome } from "./tools.ts";

const h = <K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string, text?: string): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag);
  if (cls) el.className = cls;
  if (text !== undefined) el.textContent = text;
  return el;
};

const short = (v: unknown, max = 400): string => {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
};

/** The last provider and model picked, kept across page loads. */
const remembered = (key: string): string | null => {
  try {
    return localStorage.getItem(`atomstudio.assistant.${key}`);
  } catch {
    return null;
  }
};
const remember = (key: string, value: string): void => {
  try {
    localStorage.setItem(`atomstudio.assistant.${key}`, value);
  } catch {
    // storage disabled
  }
};

const TYPE_LABEL: Record<ProviderInfo["type"], string> = {
  "openai-compat": "Chat with tools",
  api: "Hosted chat",
  "cli-agent": "Agents",
};

export const mountAssistant = (el: HTMLElement, api: StudioApi): void => {
  const session = new AssistantSession(api, apiFetch);
  let providers: ProviderInfo[] = [];
  let running: AbortController | null = null;

  el.classList.add("assistant");
  const head = h("div", "as-head");
  const title = h("strong", undefined, "Assistant");
  const providerSel = h("select", "as-provider");
  providerSel.title = "Provider";
  providerSel.setAttribute("aria-label", "Assistant provider");
  const modelSel = h("select", "as-model");
  modelSel.title = "Model";
  modelSel.setAttribute("aria-label", "Assistant model");
  const refresh = h("button", "as-icon", "↻");
  refresh.title = "Reload the provider list";
  refresh.setAttribute("aria-label", "Reload the provider list");
  const clear = h("button", "as-icon", "✕");
  clear.title = "New conversation";
  clear.setAttribute("aria-label", "New conversation");
  head.append(title, providerSel, modelSel, refresh, clear);
  const status = h("div", "as-status");
  const log = h("div", "as-log");
  log.setAttribute("aria-live", "polite");
  const form = h("form", "as-input");
  const input = h("textarea");
  input.rows = 3;
  input.placeholder = "Ask, or tell the assistant what to build (Enter sends, Shift+Enter for a new line)";
  const send = h("button", "as-send", "Send");
  send.type = "submit";
  const stop = h("button", "as-stop", "Stop");
  stop.type = "button";
  stop.hidden = true;
  form.append(input, send, stop);
  el.append(head, status, log, form);

  const current = (): ProviderInfo | undefined => providers.find((p) => `${p.type}:${p.id}` === providerSel.value);

  const fillModels = () => {
    const p = current();
    const keepModel = remembered(`model:${providerSel.value}`);
    modelSel.replaceChildren();
    const def = h("option", undefined, "default model");
    def.value = "";
    modelSel.append(def);
    for (const m of p?.models ?? []) {
      const o = h("option", undefined, m.context_window ? `${m.name} (${Math.round(m.context_window / 1000)}k)` : m.name);
      o.value = m.id;
      modelSel.append(o);
    }
    if (keepModel && Array.from(modelSel.options).some((o) => o.value === keepModel)) modelSel.value = keepModel;
    status.textContent = p && !p.available ? (p.status_message ?? "unavailable") : "";
  };

  const loadList = async () => {
    status.textContent = "Loading providers…";
    try {
      providers = await loadProviders(apiFetch);
    } catch (err) {
      status.textContent = (err as Error).message;
      return;
    }
    const previous = providerSel.value || remembered("provider");
    providerSel.replaceChildren();
    for (const type of ["openai-compat", "api", "cli-agent"] as const) {
      const group = h("optgroup");
      group.label = TYPE_LABEL[type];
      for (const p of providers.filter((x) => x.type === type)) {
        const o = h("option", undefined, p.available ? p.name : `${p.name} (unavailable)`);
        o.value = `${p.type}:${p.id}`;
        o.disabled = !p.available;
        if (p.status_message) o.title = p.status_message;
        group.append(o);
      }
      if (group.children.length) providerSel.append(group);
    }
    const firstAvailable = providers.find((p) => p.available);
    providerSel.value =
      previous && providers.some((p) => p.available && `${p.type}:${p.id}` === previous)
        ? previous
        : firstAvailable
          ? `${firstAvailable.type}:${firstAvailable.id}`
          : "";
    fillModels();
    if (!firstAvailable)
      status.textContent =
        "No provider is available: set a provider's API key on the service, start Ollama, or install an agent.";
  };

  const scroll = () => {
    log.scrollTop = log.scrollHeight;
  };

  const bubble = (cls: string, text = ""): HTMLElement => {
    const b = h("div", `as-msg ${cls}`, text);
    log.append(b);
    scroll();
    return b;
  };

  const details = (cls: string, summary: string, body: string): HTMLDetailsElement => {
    const d = h("details", `as-msg ${cls}`);
    d.append(h("summary", undefined, summary), h("pre", undefined, body));
    log.append(d);
    scroll();
    return d;
  };

  const callbacks = (): SessionCallbacks => {
    let target: HTMLElement | null = null;
    return {
      assistantStart: () => {
        target = null;
      },
      text: (delta) => {
        target ??= bubble("as-assistant");
        target.textContent += delta;
        scroll();
      },
      thinking: (text) => {
        details("as-thinking", "thinking", text);
      },
      toolUse: (name, inputValue) => {
        target = null;
        details("as-tool", `⚙ ${name}`, short(inputValue, 2000));
      },
      toolResult: (name, output) => {
        const o = output as Partial<ToolOutcome> | undefined;
        const isOutcome = o && typeof o === "object" && "content" in o && "ok" in o;
        const text = isOutcome ? (o.content as string) : short(output, 2000);
        const d = details(
          isOutcome && !o.ok ? "as-tool as-failed" : "as-tool",
          `${isOutcome && !o.ok ? "✗" : "✓"} ${name ?? "result"}`,
          text,
        );
        if (isOutcome && o.image) {
          const img = h("img");
          img.src = `data:image/${o.image.format};base64,${o.image.data}`;
          img.alt = "screenshot";
          d.append(img);
          d.open = true;
        }
      },
      error: (message, code) => {
        target = null;
        bubble("as-error", code ? `${message} (${code})` : message);
      },
      done: (usage) => {
        if (usage && (usage.input_tokens || usage.output_tokens))
          bubble("as-usage", `tokens: ${usage.input_tokens} in, ${usage.output_tokens} out`);
      },
    };
  };

  const submit = async () => {
    const text = input.value.trim();
    const p = current();
    if (!text || running) return;
    if (!p?.available) {
      status.textContent = p?.status_message ?? "Pick an available provider first.";
      return;
    }
    input.value = "";
    bubble("as-user", text);
    running = new AbortController();
    send.hidden = true;
    stop.hidden = false;
    try {
      await session.send(text, p, modelSel.value || null, callbacks(), running.signal);
    } finally {
      running = null;
      send.hidden = false;
      stop.hidden = true;
      input.focus();
    }
  };

  form.addEventListener("submit", (e) => {
    e.preventDefault();
    void submit();
  });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      void submit();
    }
  });
  stop.addEventListener("click", () => running?.abort());
  providerSel.addEventListener("change", () => {
    remember("provider", providerSel.value);
    fillModels();
  });
  modelSel.addEventListener("change", () => remember(`model:${providerSel.value}`, modelSel.value));
  refresh.addEventListener("click", () => void loadList());
  clear.addEventListener("click", () => {
    running?.abort();
    session.clear();
    log.replaceChildren();
  });
  void loadList();
};
