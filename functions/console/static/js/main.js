// The console's shell: sign-in, the workspace and listening context, the two views,
// progress and error messages.

import * as api from "./api.js";
import { h, append, clear, field, button, checkbox } from "./ui.js";
import { memoryView } from "./memory.js";
import { workspaceView } from "./workspace.js";

const main = document.getElementById("main");
const status = document.getElementById("status");
const alertBox = document.getElementById("error");
const bar = document.getElementById("account");
const LAST = "console.last";

const app = {
  workspace: "",
  context: "workspace",
  scopes: null, // memory_scopes' answer
  memoryOff: false,
  isAdmin: false,
  view: "memory",
  tool: (name, args) => api.tool(app.workspace, app.context, name, args),
  admin: (method, path, body) => api.admin(app.workspace, method, path, body),
  grants() {
    return (app.scopes && app.scopes.grants) || [];
  },
  can(grant) {
    return app.grants().includes(grant);
  },
  canWrite(uri) {
    return app.can(String(uri).startsWith("memory://me/") ? "write:personal" : "write:shared");
  },
  run,
  say,
  render,
};

let pending = 0;
// Run an API step with progress shown (after a moment, so quick answers do not
// flicker) and its error explained; retryable errors get a Retry button.
async function run(label, step) {
  pending++;
  const timer = setTimeout(() => {
    clear(status).append(h("progress", { "aria-label": label }), ` ${label}…`);
    status.hidden = false;
  }, 250);
  main.setAttribute("aria-busy", "true");
  try {
    const result = await step();
    clear(alertBox).hidden = true;
    return result;
  } catch (error) {
    showError(error, () => run(label, step));
    throw error;
  } finally {
    clearTimeout(timer);
    if (--pending === 0) {
      clear(status).hidden = true;
      main.removeAttribute("aria-busy");
    }
  }
}

function showError(error, retry) {
  clear(alertBox).hidden = false;
  alertBox.dataset.code = (error && error.code) || "error";
  alertBox.append(h("p", {}, api.explain(error)));
  if (error && error.code === "signed_out") {
    alertBox.append(button("Sign in again", () => signOut()));
  } else if (api.retryable(error)) {
    const wait = error.retryAfter ? ` (after ${error.retryAfter} s)` : "";
    alertBox.append(button(`Retry${wait}`, () => retry().catch(() => {})));
  }
  alertBox.append(button("Dismiss", () => (clear(alertBox).hidden = true), { class: "quiet" }));
}

function say(text) {
  clear(status).append(text);
  status.hidden = false;
}

async function signOut() {
  await api.signOut();
  app.scopes = null;
  renderSignIn();
}

function renderSignIn(message) {
  clear(bar);
  clear(main);
  const readOnly = checkbox("Read-only session (look, change nothing)", false, { id: "readonly" });
  main.append(
    h(
      "section",
      { class: "signin", "aria-labelledby": "signin-title" },
      h("h2", { id: "signin-title" }, "Sign in"),
      h("p", {}, "See and correct what your agents remember. You sign in with the same account your MCP clients use."),
      message ? h("p", { class: "notice", role: "alert" }, message) : null,
      readOnly,
      h("p", {}, button("Sign in", () => api.signIn(readOnly.querySelector("input").checked).catch((e) => showError(e)), { id: "signin" })),
    ),
  );
  main.querySelector("#signin").focus();
}

function chooser() {
  const last = JSON.parse(sessionStorage.getItem(LAST) || "{}");
  const workspace = h("input", {
    id: "workspace",
    name: "workspace",
    value: app.workspace || last.workspace || "",
    required: true,
    pattern: "[a-z0-9][a-z0-9-]{0,62}",
    autocomplete: "off",
    placeholder: "acme",
  });
  const context = h("input", {
    id: "context",
    name: "context",
    value: app.context || last.context || "workspace",
    list: "context-options",
    autocomplete: "off",
  });
  const options = h("datalist", { id: "context-options" }, ["workspace", ...((app.scopes && app.scopes.visible_contexts) || [])].map((c) => h("option", { value: c })));
  const form = h(
    "form",
    {
      class: "chooser",
      on: {
        submit: (event) => {
          event.preventDefault();
          open(workspace.value.trim(), context.value.trim() || "workspace").catch(() => {});
        },
      },
    },
    field("Workspace", workspace),
    field("Listening context", context, "workspace, channel:…, dm:…"),
    options,
    h("button", { type: "submit", id: "open" }, "Open"),
  );
  return form;
}

async function open(workspace, context) {
  app.workspace = workspace;
  app.context = context;
  app.scopes = null;
  app.isAdmin = false;
  app.memoryOff = false;
  sessionStorage.setItem(LAST, JSON.stringify({ workspace, context }));
  try {
    app.scopes = await run("Opening the workspace", () => app.tool("memory_scopes", {}));
    app.isAdmin = app.can("admin");
  } catch (error) {
    // The memory feature off answers like a workspace one is not in; an admin may
    // still turn it on.
    if (error.code !== "not_a_member") return render();
    try {
      const feature = await api.admin(workspace, "GET", "/memory");
      app.isAdmin = true;
      app.memoryOff = !feature.enabled;
      app.view = "workspace";
      clear(alertBox).hidden = true;
    } catch {
      /* the first error stands */
    }
  }
  render();
}

function render() {
  clear(bar);
  const tokens = api.session();
  const who = app.scopes ? `${app.scopes.principal.handle}` : "";
  append(bar, [
    who ? h("span", { id: "who" }, `Signed in as ${who}`) : h("span", {}, "Signed in"),
    tokens && tokens.scope === "memory/read" ? h("span", { class: "badge" }, "read-only") : null,
    button("Sign out", signOut, { id: "signout" }),
  ]);
  clear(main);
  main.append(chooser());
  if (!app.scopes && !app.isAdmin) return;
  const tabs = h("div", { class: "tabs", role: "group", "aria-label": "Views" });
  const tab = (name, label) =>
    button(label, () => { app.view = name; render(); }, { "aria-pressed": String(app.view === name), id: `tab-${name}` });
  if (app.scopes) tabs.append(tab("memory", "My memory"));
  if (app.isAdmin) tabs.append(tab("workspace", "Workspace"));
  main.append(tabs);
  if (app.view === "workspace" && app.isAdmin) main.append(workspaceView(app));
  else if (app.scopes) main.append(memoryView(app));
}

async function start() {
  try {
    await api.finishSignIn();
  } catch (error) {
    return renderSignIn(api.explain(error));
  }
  if (!api.session()) return renderSignIn();
  render();
  const last = JSON.parse(sessionStorage.getItem(LAST) || "{}");
  if (last.workspace) open(last.workspace, last.context || "workspace").catch(() => {});
}

start();
