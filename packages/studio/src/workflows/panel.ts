/**
 * The Workflows panel: build a chain of nodes from the service's operations (plus `map` and
 * `select`), edit each node's parameters in a form generated from its JSON schema (a JSON editor
 * for the rest), wire inputs by picking an upstream node's output, check the graph before
 * sending, run it on the service's queue and follow every node's state, attempts, timings and
 * errors (polling `GET /api/workflow/{id}` with backoff), cancel, and open any node's output
 * structure in the viewer (undoable). The workflow ids this browser created are kept in
 * localStorage: after a reload the panel reattaches to the running one.
 */
import { fromDict } from "atomstudio-core";
import { apiFetch } from "../auth.ts";
import { exampleById } from "../examples.ts";
import type { Studio } from "../studio.ts";
import { h } from "../ui/dom.ts";
import { catalogFromOpenApi, type NodeType, outputsOf, structureParams } from "./catalog.ts";
import {
  createRequest,
  freshId,
  type GraphIssue,
  inputChoices,
  issuesFromServiceError,
  NODE_ID_PATTERN,
  renameNode,
  validateWorkflow,
  type WorkflowDraft,
  type WorkflowNode,
} from "./graph.ts";
import { checkParams, type FieldSpec, formFields, readField, showField } from "./params.ts";
import { browserStore, forget, loadSaved, remember } from "./saved.ts";
import {
  findStructures,
  fingerprint,
  formatDuration,
  type NodeView,
  nextPollDelay,
  readStatus,
  type WorkflowView,
} from "./status.ts";
import { EMT_ELEMENTS, SLAB_RELAX_SELECT } from "./templates.ts";
import "./workflows.css";

export const WORKFLOW_ROUTES = {
  create: "/api/workflow/create",
  run: "/api/workflow/run",
  cancel: "/api/workflow/cancel",
  status: (id: string) => `/api/workflow/${encodeURIComponent(id)}`,
  nodeTypes: "/api/workflow/node-types",
  openapi: "/api/openapi.json",
};

interface ErrorBody {
  error?: string;
  code?: string;
  details?: unknown;
}

class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody,
  ) {
    super(`${body.code ?? status}: ${body.error ?? "request failed"}`);
  }
}

const call = async <T>(path: string, init: RequestInit = {}): Promise<T> => {
  const r = await apiFetch(path, init);
  const json = (await r.json().catch(() => ({}))) as T & ErrorBody;
  if (!r.ok) throw new ServiceError(r.status, json);
  return json;
};

const asRecord = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

const describeStructure = (v: unknown): string => {
  const sites = asRecord(v).sites;
  if (!Array.isArray(sites)) return "not set";
  const counts = new Map<string, number>();
  for (const s of sites) {
    const el = String(asRecord((asRecord(s).species as unknown[] | undefined)?.[0]).element ?? "?");
    counts.set(el, (counts.get(el) ?? 0) + 1);
  }
  return `${[...counts].map(([e, n]) => `${e}${n > 1 ? n : ""}`).join("")} (${sites.length} atoms)`;
};

export interface WorkflowsPanel {
  /** The graph being edited. */
  readonly draft: WorkflowDraft;
  /** Replace the graph (e.g. a template). */
  load(draft: WorkflowDraft): void;
  /** Reattach to a workflow the service has (its definition and its latest run). */
  attach(id: string): Promise<void>;
}

export const mountWorkflowsPanel = (el: HTMLElement, studio: Studio): WorkflowsPanel => {
  el.classList.add("workflows-panel");
  el.setAttribute("aria-labelledby", "wf-title");
  const store = browserStore();

  let catalog: NodeType[] = [];
  let draft: WorkflowDraft = { name: "workflow", nodes: [] };
  let issues: GraphIssue[] = [];
  /** The workflow shown and followed (the service's id), and the body it was created from. */
  let workflowId: string | null = null;
  let createdBody: string | null = null;
  let view: WorkflowView | null = null;
  let pollTimer: ReturnType<typeof setTimeout> | undefined;
  let pollDelay: number | null = null;
  let lastPrint = "";
  let pollGeneration = 0;

  const typeOf = (type: string): NodeType | undefined => catalog.find((t) => t.type === type);
  const knownTypes = () => new Set(catalog.map((t) => t.type));

  // ---- static controls -------------------------------------------------------------------------
  const templateBtn = h(
    "button",
    { id: "wf-template", type: "button", title: SLAB_RELAX_SELECT.description },
    "Template: slab → relax each → lowest",
  );
  const newBtn = h("button", { id: "wf-new", type: "button", title: "Start an empty workflow" }, "New");
  const nameInput = h("input", { id: "wf-name", value: draft.name, "aria-label": "workflow name", maxlength: "200" });
  const addType = h("select", { id: "wf-add-type", "aria-label": "node type to add" });
  const addBtn = h("button", { id: "wf-add", type: "button", disabled: "" }, "Add node");
  const nodesList = h("ol", { id: "wf-nodes", class: "wf-nodes" });
  const globalIssues = h("ul", { id: "wf-issues", class: "wf-issues", role: "alert" });
  const parallel = h("input", {
    id: "wf-parallel",
    type: "number",
    min: "1",
    max: "64",
    value: "4",
    title: "jobs of this run queued or running at once",
  });
  const retries = h("input", {
    id: "wf-retries",
    type: "number",
    min: "0",
    max: "10",
    value: "0",
    title: "retries of each node",
  });
  const validateBtn = h("button", { id: "wf-validate", type: "button" }, "Check");
  const runBtn = h("button", { id: "wf-run", type: "button" }, "Run");
  const cancelBtn = h("button", { id: "wf-cancel", type: "button", disabled: "" }, "Cancel");
  const statusLine = h("div", { id: "wf-status", class: "wf-status", role: "status" });
  const savedList = h("ul", { id: "wf-saved", class: "wf-saved" });
  el.append(
    h("h2", { id: "wf-title" }, "Workflows"),
    h("div", { class: "row" }, templateBtn, newBtn),
    h("div", { class: "row" }, h("label", {}, "Name ", nameInput)),
    h("div", { class: "row" }, addType, addBtn),
    nodesList,
    globalIssues,
    h("div", { class: "row" }, h("label", {}, "parallel ", parallel), h("label", {}, "retries ", retries)),
    h("div", { class: "row" }, validateBtn, runBtn, cancelBtn),
    statusLine,
    h("h3", {}, "Workflows of this browser"),
    savedList,
  );

  const say = (text: string, error = false): void => {
    statusLine.textContent = text;
    statusLine.classList.toggle("error", error);
  };

  // ---- editing -----------------------------------------------------------------------------------
  /** After an edit the graph is checked again; Run creates a new workflow when it differs from the one created. */
  const edited = (): void => {
    issues = localIssues();
    renderIssues();
  };

  const setNode = (id: string, change: (n: WorkflowNode) => WorkflowNode): void => {
    draft = { ...draft, nodes: draft.nodes.map((n) => (n.id === id ? change(n) : n)) };
    edited();
  };

  const localIssues = (): GraphIssue[] => {
    const found = catalog.length ? validateWorkflow(draft, knownTypes()) : [];
    for (const n of draft.nodes) {
      const t = typeOf(n.type);
      if (!t) continue;
      const wired = Object.keys(n.inputs);
      const messages =
        n.type === "map"
          ? [
              ...checkParams(t.schema, n.params, []),
              ...(typeOf(String(n.params.operation ?? ""))
                ? checkParams((typeOf(String(n.params.operation)) as NodeType).schema, asRecord(n.params.params), [
                    String(n.params.item_key ?? "structure"),
                  ]).map((m) => `${String(n.params.operation)}: ${m}`)
                : []),
            ]
          : checkParams(t.schema, n.params, wired);
      if (n.type === "map" && !typeOf(String(n.params.operation ?? "")))
        found.push({
          node: n.id,
          code: "UNKNOWN_NODE_TYPE",
          message: `map operation ${JSON.stringify(n.params.operation ?? "")} is not an operation`,
        });
      for (const m of messages) found.push({ node: n.id, code: "INVALID_NODE_PARAMS", message: m });
      if ((n.type === "map" || n.type === "select") && !n.inputs.items)
        found.push({ node: n.id, code: "INVALID_NODE_PARAMS", input: "items", message: "items: wire the list it runs over" });
    }
    return found;
  };

  const issueItem = (i: GraphIssue): HTMLLIElement =>
    h("li", { "data-code": String(i.code), ...(i.input ? { "data-input": i.input } : {}) }, `${i.code}: ${i.message}`);

  const renderIssues = (): void => {
    globalIssues.replaceChildren(
      ...issues.filter((i) => i.node === null || !draft.nodes.some((n) => n.id === i.node)).map(issueItem),
    );
    for (const li of Array.from(nodesList.querySelectorAll<HTMLElement>("li.wf-node"))) {
      const mine = issues.filter((i) => i.node === li.dataset.node);
      const box = li.querySelector(".wf-node-issues") as HTMLElement;
      box.replaceChildren(...mine.map(issueItem));
      li.classList.toggle("invalid", mine.length > 0);
    }
    el.dataset.issues = String(issues.length);
  };

  // ---- one node -----------------------------------------------------------------------------------
  const fieldControl = (
    f: FieldSpec,
    value: unknown,
    onValue: (v: unknown) => void,
    report: (msg: string | null) => void,
  ): HTMLElement => {
    let input: HTMLInputElement | HTMLSelectElement;
    if (f.kind === "enum") {
      const sel = h("select", {});
      if (!f.required) sel.add(new Option("(default)", ""));
      for (const o of f.options ?? []) sel.add(new Option(o, o));
      sel.value = showField(f, value);
      input = sel;
    } else if (f.kind === "boolean") {
      input = h("input", { type: "checkbox" });
      (input as HTMLInputElement).checked = value === undefined ? f.default === true : value === true;
    } else {
      input = h("input", {
        value: showField(f, value),
        ...(f.kind === "number" || f.kind === "integer" ? { inputmode: "decimal", size: "6" } : { size: "10" }),
      });
      if (f.default !== undefined) input.setAttribute("placeholder", showField(f, f.default));
    }
    input.dataset.param = f.name;
    input.title = f.description || f.name;
    input.onchange = () => {
      const r = readField(f, input.value, (input as HTMLInputElement).checked);
      if ("error" in r) {
        input.setAttribute("aria-invalid", "true");
        report(r.error);
        return;
      }
      input.removeAttribute("aria-invalid");
      report(null);
      onValue(r.value);
    };
    return h("label", { class: "field" }, h("span", {}, `${f.name}${f.required ? " *" : ""}`), input);
  };

  /** A form for `values` from `schema`: fields for simple values, a JSON editor for the rest. */
  const paramsForm = (
    schema: Record<string, unknown>,
    values: Record<string, unknown>,
    skip: string[],
    onChange: (next: Record<string, unknown>) => void,
    prefix: string,
  ): HTMLElement => {
    const box = h("div", { class: "wf-params" });
    const fieldError = h("p", { class: "field-error", role: "alert" });
    const structures = structureParams(schema).filter((k) => !skip.includes(k));
    const { fields, json } = formFields(schema, [...skip, ...structures]);
    let current = { ...values };
    const set = (k: string, v: unknown): void => {
      current = { ...current };
      if (v === undefined) delete current[k];
      else current[k] = v;
      onChange(current);
    };
    const row = h("div", { class: "row fields" });
    for (const f of fields)
      row.append(
        fieldControl(
          f,
          current[f.name],
          (v) => set(f.name, v),
          (m) => {
            fieldError.textContent = m ?? "";
          },
        ),
      );
    box.append(row);
    for (const k of structures) {
      // A list of structures (e.g. build_supercell_legacy's `structures`) grows by one per click; a single one is replaced.
      const isList = asRecord(asRecord(schema.properties)[k]).type === "array";
      const describe = (v: unknown): string =>
        isList
          ? `${k}: ${Array.isArray(v) && v.length ? v.map(describeStructure).join(", ") : "none"}`
          : `${k}: ${describeStructure(v)}`;
      const use = h(
        "button",
        { type: "button", class: "wf-use-structure", "data-param": k },
        isList ? "Add current structure" : "Use current structure",
      );
      const shown = h("span", { class: "wf-structure", "data-param": k }, describe(current[k]));
      use.onclick = () => {
        const s = studio.api.getStructure();
        if (!s) return say("No structure in the viewer", true);
        const next = isList ? [...(Array.isArray(current[k]) ? (current[k] as unknown[]) : []), s] : s;
        set(k, next);
        shown.textContent = describe(next);
      };
      const row = h("div", { class: "row" }, shown, use);
      if (isList) {
        const clear = h("button", { type: "button", class: "wf-clear-structures", "data-param": k }, "Clear");
        clear.onclick = () => {
          set(k, undefined);
          shown.textContent = describe(undefined);
        };
        row.append(clear);
      }
      box.append(row);
    }
    if (json.length) {
      const picked = Object.fromEntries(json.filter((k) => current[k] !== undefined).map((k) => [k, current[k]]));
      const area = h("textarea", {
        class: "wf-json",
        rows: "3",
        "data-params-json": prefix,
        "aria-label": `other parameters (JSON): ${json.join(", ")}`,
        placeholder: `{ ${json.map((k) => `"${k}": …`).join(", ")} }`,
      });
      area.value = Object.keys(picked).length ? JSON.stringify(picked, null, 1) : "";
      const jsonError = h("p", { class: "field-error", role: "alert" });
      area.onchange = () => {
        let parsed: unknown = {};
        try {
          parsed = area.value.trim() ? JSON.parse(area.value) : {};
        } catch (e) {
          area.setAttribute("aria-invalid", "true");
          jsonError.textContent = `JSON: ${(e as Error).message}`;
          return;
        }
        const obj = asRecord(parsed);
        if (parsed !== obj) {
          area.setAttribute("aria-invalid", "true");
          jsonError.textContent = "JSON: an object, { … }";
          return;
        }
        const extra = Object.keys(obj).filter((k) => !json.includes(k));
        area.removeAttribute("aria-invalid");
        jsonError.textContent = extra.length ? `not parameters of this operation: ${extra.join(", ")}` : "";
        const next = { ...current };
        for (const k of json) delete next[k];
        current = { ...next, ...obj };
        onChange(current);
      };
      box.append(h("label", { class: "field wide" }, h("span", {}, `other (JSON): ${json.join(", ")}`), area), jsonError);
    }
    box.append(fieldError);
    return box;
  };

  const inputsEditor = (n: WorkflowNode, t: NodeType): HTMLElement => {
    const box = h("div", { class: "wf-inputs" });
    const choices = inputChoices(draft.nodes, n.id, (type) => outputsOf(catalog, type));
    for (const [key, ref] of Object.entries(n.inputs)) {
      const sel = h("select", { "data-input": key, "aria-label": `input ${key}` });
      for (const c of new Set([...choices, ref])) sel.add(new Option(c, c));
      sel.value = ref;
      sel.onchange = () => setNode(n.id, (m) => ({ ...m, inputs: { ...m.inputs, [key]: sel.value } }));
      const unwire = h("button", { type: "button", title: `stop reading ${key} from an upstream node`, class: "wf-unwire" }, "×");
      unwire.onclick = () => {
        setNode(n.id, (m) => {
          const inputs = { ...m.inputs };
          delete inputs[key];
          return { ...m, inputs };
        });
        render();
      };
      box.append(h("div", { class: "row" }, h("span", { class: "wf-key" }, `${key} ←`), sel, unwire));
    }
    const free = t.inputKeys.filter((k) => !(k in n.inputs));
    if (free.length && choices.length) {
      const keySel = h("select", { class: "wf-input-key", "aria-label": "parameter an upstream output fills" });
      for (const k of free) keySel.add(new Option(k, k));
      const preferred = [...structureParams(t.schema), "items"].find((k) => free.includes(k));
      if (preferred) keySel.value = preferred;
      const refSel = h("select", { class: "wf-input-ref", "aria-label": "upstream output" });
      for (const c of choices) refSel.add(new Option(c, c));
      const wire = h("button", { type: "button", class: "wf-wire" }, "Wire input");
      wire.onclick = () => {
        const key = keySel.value;
        setNode(n.id, (m) => {
          const params = { ...m.params };
          delete params[key];
          return { ...m, params, inputs: { ...m.inputs, [key]: refSel.value } };
        });
        render();
      };
      box.append(h("div", { class: "row" }, keySel, h("span", {}, "←"), refSel, wire));
    }
    return box;
  };

  const nodeItem = (n: WorkflowNode): HTMLLIElement => {
    const t = typeOf(n.type);
    const li = h("li", { class: "wf-node", "data-node": n.id, "data-type": n.type });
    const idInput = h("input", { class: "wf-id", value: n.id, "aria-label": "node id", size: "10" });
    idInput.onchange = () => {
      const to = idInput.value.trim();
      if (!NODE_ID_PATTERN.test(to) || draft.nodes.some((m) => m.id === to)) {
        idInput.setAttribute("aria-invalid", "true");
        say(`Node id ${JSON.stringify(to)}: unique, a letter or _, then letters, digits, _ or -`, true);
        return;
      }
      draft = renameNode(draft, n.id, to);
      edited();
      render();
    };
    const remove = h("button", { type: "button", class: "wf-remove", title: "remove this node" }, "Remove");
    remove.onclick = () => {
      draft = { ...draft, nodes: draft.nodes.filter((m) => m.id !== n.id) };
      edited();
      render();
    };
    const state = h("span", { class: "wf-state", "data-state": "idle" }, "");
    const meta = h("span", { class: "wf-meta" }, "");
    li.append(
      h(
        "div",
        { class: "row wf-head" },
        idInput,
        h("span", { class: "wf-type", title: t?.summary ?? "" }, n.type),
        state,
        meta,
        remove,
      ),
      h("ul", { class: "wf-node-issues wf-issues", role: "alert" }),
    );
    if (!t) return li;
    // Per node: retries and the deadline of one attempt (empty: the run's retries, the service's deadline).
    const numberBox = (
      cls: string,
      label: string,
      value: number | undefined,
      title: string,
      apply: (v: number | undefined) => void,
    ) => {
      const input = h("input", {
        class: cls,
        inputmode: "decimal",
        size: "4",
        value: value === undefined ? "" : String(value),
        title,
      });
      input.onchange = () => {
        const text = input.value.trim();
        const v = text === "" ? undefined : Number(text);
        apply(v === undefined || Number.isNaN(v) ? undefined : v);
        if (v !== undefined && Number.isNaN(v)) say(`${label}: a number`, true);
      };
      return h("label", { class: "field" }, h("span", {}, label), input);
    };
    li.append(
      h(
        "div",
        { class: "row fields" },
        numberBox("wf-node-retries", "retries", n.retries, "retries of this node after a failure (empty: the run's)", (v) =>
          setNode(n.id, (m) => {
            const { retries: _, ...rest } = m;
            return v === undefined ? rest : { ...rest, retries: v };
          }),
        ),
        numberBox("wf-node-timeout", "timeout (s)", n.timeout_s, "deadline of one attempt, seconds (empty: the service's)", (v) =>
          setNode(n.id, (m) => {
            const { timeout_s: _, ...rest } = m;
            return v === undefined ? rest : { ...rest, timeout_s: v };
          }),
        ),
      ),
    );
    li.append(inputsEditor(n, t));
    if (n.type === "map") {
      const opSel = h("select", { class: "wf-map-op", "aria-label": "operation run on each item" });
      for (const c of catalog.filter((c) => !c.builtin)) opSel.add(new Option(c.type, c.type));
      opSel.value = String(n.params.operation ?? "");
      opSel.onchange = () => {
        setNode(n.id, (m) => ({ ...m, params: { ...m.params, operation: opSel.value, params: {} } }));
        render();
      };
      const itemKey = String(n.params.item_key ?? "structure");
      li.append(h("div", { class: "row" }, h("span", {}, "each item →"), opSel));
      const op = typeOf(opSel.value);
      if (op)
        li.append(
          paramsForm(
            op.schema,
            asRecord(n.params.params),
            [itemKey],
            (next) => setNode(n.id, (m) => ({ ...m, params: { ...m.params, params: next } })),
            `${n.id}.params`,
          ),
        );
    } else
      li.append(
        paramsForm(t.schema, n.params, Object.keys(n.inputs), (next) => setNode(n.id, (m) => ({ ...m, params: next })), n.id),
      );
    li.append(h("div", { class: "wf-output" }));
    return li;
  };

  const render = (): void => {
    nameInput.value = draft.name;
    nodesList.replaceChildren(...draft.nodes.map(nodeItem));
    el.dataset.nodes = String(draft.nodes.length);
    renderIssues();
    if (view) showView(view);
  };

  // ---- run state ------------------------------------------------------------------------------------
  const openOutput = (node: NodeView, index: number): void => {
    const found = findStructures(node.output)[index];
    if (!found) return;
    studio.setStructure(fromDict(found.dict), { name: `${draft.name}: ${node.id} ${found.path}` });
    say(`Opened ${node.id} → ${found.path} (undo returns to the previous structure)`);
  };

  const showNode = (li: HTMLElement, node: NodeView | undefined): void => {
    const state = li.querySelector(".wf-state") as HTMLElement;
    const meta = li.querySelector(".wf-meta") as HTMLElement;
    const out = li.querySelector(".wf-output") as HTMLElement | null;
    li.dataset.state = node?.state ?? "idle";
    state.dataset.state = node?.state ?? "idle";
    state.textContent = node ? node.state : "";
    meta.textContent = node
      ? [
          node.attempts ? `${node.attempts} attempt${node.attempts > 1 ? "s" : ""}` : "",
          formatDuration(node.durationMs),
          node.progress ? `${node.progress.done}/${node.progress.total} items` : "",
        ]
          .filter(Boolean)
          .join(" · ")
      : "";
    li.dataset.attempts = String(node?.attempts ?? 0);
    const runErrors = li.querySelector(".wf-node-issues") as HTMLElement;
    runErrors.querySelector(".wf-run-error")?.remove();
    if (node?.error)
      runErrors.append(
        h(
          "li",
          { class: "wf-run-error", "data-code": node.error.code ?? "" },
          `${node.error.code ?? "error"}: ${node.error.message}`,
        ),
      );
    if (!out) return;
    if (node?.state !== "succeeded") {
      out.replaceChildren();
      return;
    }
    if (out.dataset.shown === `${view?.runId}`) return;
    out.dataset.shown = `${view?.runId}`;
    const found = findStructures(node.output);
    const buttons = found.slice(0, 24).map((f, i) => {
      const b = h(
        "button",
        { type: "button", class: "wf-open", "data-path": f.path },
        `Open ${f.path}${f.energy !== null ? ` (${f.energy.toFixed(4)} eV)` : ""}`,
      );
      b.onclick = () => openOutput(node, i);
      return b;
    });
    const value = asRecord(node.output).value ?? asRecord(node.output).energy;
    out.replaceChildren(
      ...(typeof value === "number" ? [h("div", { class: "wf-value" }, `value ${value}`)] : []),
      h("div", { class: "row wrap" }, ...buttons),
      ...(found.length > 24 ? [h("span", { class: "hint" }, `and ${found.length - 24} more`)] : []),
    );
  };

  const showView = (v: WorkflowView): void => {
    for (const li of Array.from(nodesList.querySelectorAll<HTMLElement>("li.wf-node")))
      showNode(
        li,
        v.nodes.find((n) => n.id === li.dataset.node),
      );
    el.dataset.runState = v.state;
    if (v.runId) el.dataset.runId = v.runId;
    cancelBtn.disabled = v.terminal || v.state === "draft";
    runBtn.disabled = !v.terminal && v.state !== "draft";
    const done = v.nodes.filter((n) => n.state === "succeeded").length;
    say(
      `${v.name ?? "workflow"} ${v.id}: ${v.state}${v.nodes.length ? `, ${done}/${v.nodes.length} nodes done` : ""}${v.error ? ` — ${v.error.code ?? "error"}: ${v.error.message}` : ""}`,
      v.state === "failed",
    );
  };

  const stopPolling = (): void => {
    clearTimeout(pollTimer);
    pollGeneration++;
  };

  const poll = async (id: string, generation: number): Promise<void> => {
    if (generation !== pollGeneration) return;
    let changed = false;
    try {
      const v = readStatus(await call(WORKFLOW_ROUTES.status(id)));
      if (generation !== pollGeneration) return;
      const print = fingerprint(v);
      changed = print !== lastPrint;
      lastPrint = print;
      view = v;
      showView(v);
      renderSaved();
      if (v.terminal) return;
    } catch (e) {
      say(`Status of ${id}: ${(e as Error).message} (trying again)`, true);
    }
    pollDelay = nextPollDelay(pollDelay, changed);
    el.dataset.pollMs = String(pollDelay);
    pollTimer = setTimeout(() => void poll(id, generation), pollDelay);
  };

  const follow = (id: string): void => {
    stopPolling();
    pollDelay = null;
    lastPrint = "";
    void poll(id, pollGeneration);
  };

  // ---- check, create, run, cancel -------------------------------------------------------------------
  const check = (): boolean => {
    draft = { ...draft, name: nameInput.value.trim() || "workflow" };
    issues = localIssues();
    renderIssues();
    if (issues.length) say(`${issues.length} problem${issues.length > 1 ? "s" : ""}: see the nodes marked`, true);
    return issues.length === 0;
  };

  const create = async (body: string): Promise<string | null> => {
    try {
      const r = await call<{ id: string }>(WORKFLOW_ROUTES.create, { method: "POST", body });
      workflowId = r.id;
      createdBody = body;
      el.dataset.workflowId = r.id;
      remember(store, { id: r.id, name: draft.name, createdAt: Date.now() });
      renderSaved();
      return r.id;
    } catch (e) {
      if (e instanceof ServiceError) {
        issues = issuesFromServiceError(e.body);
        renderIssues();
      }
      say(`Not created: ${(e as Error).message}`, true);
      return null;
    }
  };

  const run = async (): Promise<void> => {
    if (!check()) return;
    runBtn.disabled = true;
    try {
      // The service's copy of a workflow never changes: an edited graph is a new workflow.
      const body = JSON.stringify(createRequest(draft));
      const id = workflowId && createdBody === body ? workflowId : await create(body);
      if (!id) return;
      say(`Starting ${id}…`);
      const r = await call<{ run_id: string }>(WORKFLOW_ROUTES.run, {
        method: "POST",
        headers: { "idempotency-key": `${id}:${crypto.randomUUID()}` },
        body: JSON.stringify({
          workflow_id: id,
          max_parallel: Math.max(1, Math.min(64, Number(parallel.value) || 4)),
          retries: Math.max(0, Math.min(10, Number(retries.value) || 0)),
        }),
      });
      remember(store, { id, name: draft.name, createdAt: Date.now(), runId: r.run_id });
      el.dataset.runId = r.run_id;
      view = null;
      for (const out of Array.from(nodesList.querySelectorAll<HTMLElement>(".wf-output"))) delete out.dataset.shown;
      follow(id);
    } catch (e) {
      if (e instanceof ServiceError && e.body.code) {
        issues = issuesFromServiceError(e.body);
        renderIssues();
      }
      say(`Not started: ${(e as Error).message}`, true);
    } finally {
      runBtn.disabled = !!view && !view.terminal;
    }
  };

  const cancel = async (): Promise<void> => {
    const id = view?.runId ?? workflowId;
    if (!id) return;
    cancelBtn.disabled = true;
    try {
      await call(WORKFLOW_ROUTES.cancel, { method: "POST", body: JSON.stringify({ id }) });
      say(`Cancelling ${id}…`);
      if (workflowId) follow(workflowId);
    } catch (e) {
      cancelBtn.disabled = false;
      say(`Cancel: ${(e as Error).message}`, true);
    }
  };

  const attach = async (id: string): Promise<void> => {
    try {
      const raw = await call<Record<string, unknown>>(WORKFLOW_ROUTES.status(id));
      const nodes = (Array.isArray(raw.nodes) ? raw.nodes : []) as WorkflowNode[];
      draft = {
        name: String(raw.name ?? "workflow"),
        nodes: nodes.map((n) => ({
          id: n.id,
          type: n.type,
          params: n.params ?? {},
          inputs: n.inputs ?? {},
          ...(n.retries !== undefined ? { retries: n.retries } : {}),
          ...(n.timeout_s !== undefined ? { timeout_s: n.timeout_s } : {}),
        })),
      };
      workflowId = String(raw.id ?? id);
      createdBody = JSON.stringify(createRequest(draft));
      el.dataset.workflowId = workflowId;
      view = readStatus(raw);
      issues = [];
      render();
      follow(workflowId);
    } catch (e) {
      if (e instanceof ServiceError && e.status === 404) {
        forget(store, id);
        renderSaved();
      }
      say(`Could not open ${id}: ${(e as Error).message}`, true);
    }
  };

  // ---- the saved list ------------------------------------------------------------------------------------
  const renderSaved = (): void => {
    const saved = loadSaved(store);
    savedList.replaceChildren(
      ...saved.map((w) => {
        const open = h("button", { type: "button", class: "wf-attach", "data-id": w.id }, "Open");
        open.onclick = () => void attach(w.id);
        const drop = h("button", { type: "button", class: "wf-forget", title: "forget it in this browser" }, "Forget");
        drop.onclick = () => {
          forget(store, w.id);
          renderSaved();
        };
        const current = w.id === workflowId;
        return h(
          "li",
          { "data-id": w.id, ...(current ? { "aria-current": "true" } : {}) },
          `${w.name} `,
          h("code", {}, w.id),
          current && view ? ` ${view.state} ` : " ",
          open,
          drop,
        );
      }),
    );
  };

  // ---- wiring ------------------------------------------------------------------------------------------
  const load = (d: WorkflowDraft): void => {
    stopPolling();
    draft = d;
    workflowId = null;
    createdBody = null;
    view = null;
    delete el.dataset.workflowId;
    delete el.dataset.runState;
    delete el.dataset.runId;
    cancelBtn.disabled = true;
    runBtn.disabled = false;
    issues = localIssues();
    render();
  };

  templateBtn.onclick = () => {
    const current = studio.api.getStructure() as Record<string, unknown> | null;
    const sites = (current?.sites ?? []) as { species: { element: string }[] }[];
    const usable =
      current?.lattice &&
      sites.length > 0 &&
      sites.length <= 8 &&
      sites.every((s) => s.species.every((sp) => EMT_ELEMENTS.has(sp.element)));
    const bulk = usable ? current : (exampleById("cu")?.dict as unknown as Record<string, unknown>);
    load(SLAB_RELAX_SELECT.build(bulk));
    say(`Template loaded on ${usable ? "the current structure" : "Cu (fcc): EMT needs Al, Cu, Ag, Au, Ni, Pd or Pt"}; press Run`);
  };
  newBtn.onclick = () => load({ name: "workflow", nodes: [] });
  nameInput.onchange = () => {
    draft = { ...draft, name: nameInput.value.trim() || "workflow" };
    edited();
  };
  addBtn.onclick = () => {
    const t = typeOf(addType.value);
    if (!t) return;
    const id = freshId(draft.nodes, t.type);
    const params: Record<string, unknown> =
      t.type === "map" ? { operation: "optimize_structure", item_key: "structure", params: { calculator: "emt" } } : {};
    if (t.type === "select") params.by = "energy";
    // A new node reads the structure of the last node when it takes one; the first one starts from the viewer's.
    const inputs: Record<string, string> = {};
    const last = draft.nodes.at(-1);
    const sParam = structureParams(t.schema)[0];
    if (last && t.inputKeys.includes("items"))
      inputs.items = `${last.id}.${outputsOf(catalog, last.type).find((o) => o === "results" || o === "structures") ?? "results"}`;
    else if (last && sParam && outputsOf(catalog, last.type).includes("structure")) inputs[sParam] = `${last.id}.structure`;
    else if (sParam) {
      const s = studio.api.getStructure();
      if (s) params[sParam] = s;
    }
    draft = { ...draft, nodes: [...draft.nodes, { id, type: t.type, params, inputs }] };
    edited();
    render();
  };
  validateBtn.onclick = () => {
    if (check()) say("No problems found");
  };
  runBtn.onclick = () => void run();
  cancelBtn.onclick = () => void cancel();

  const loadCatalog = async (): Promise<void> => {
    try {
      const doc = await call<unknown>(WORKFLOW_ROUTES.openapi);
      let allowed: Set<string> | undefined;
      try {
        const r = await call<{ node_types: { type: string }[] }>(WORKFLOW_ROUTES.nodeTypes);
        allowed = new Set(r.node_types.map((t) => t.type));
      } catch {
        // An older service without the listing: every operation is offered, the service still decides.
      }
      catalog = catalogFromOpenApi(doc, allowed);
      addType.replaceChildren();
      const groups = new Map<string, HTMLOptGroupElement>();
      for (const t of catalog) {
        let g = groups.get(t.group);
        if (!g) {
          g = h("optgroup", { label: t.group });
          groups.set(t.group, g);
          addType.append(g);
        }
        const o = new Option(t.type, t.type);
        o.title = t.summary;
        g.append(o);
      }
      addBtn.disabled = false;
      el.dataset.catalog = String(catalog.length);
      if (draft.nodes.length) render();
    } catch (e) {
      say(`Operations not loaded: ${(e as Error).message}`, true);
    }
  };

  /** Reattach to the newest saved workflow that is still running ("close the browser, come back"). */
  const reattach = async (): Promise<void> => {
    for (const w of loadSaved(store).slice(0, 10)) {
      try {
        const v = readStatus(await call(WORKFLOW_ROUTES.status(w.id)));
        if (!v.terminal && v.state !== "draft") {
          await attach(w.id);
          say(`Reattached to ${w.name} (${w.id}), ${v.state}`);
          return;
        }
      } catch {
        // gone from the service (or unreachable): keep it listed; Open says why
      }
    }
  };

  renderSaved();
  void loadCatalog().then(reattach);

  return {
    get draft() {
      return draft;
    },
    load,
    attach,
  };
};
