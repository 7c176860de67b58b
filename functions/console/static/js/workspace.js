// "Workspace" (admins): memory on/off, members, invitations, agent keys, private
// channels and DMs, the audit trail and its chart, all through the admin API.

import { h, append, clear, field, checkbox, button, when, writer } from "./ui.js";
import { renderChart } from "./chart.js";

const GRANTS = ["read", "write:personal", "write:shared", "delete", "admin"];
const SCOPES = ["memory/read", "memory/write.personal", "memory/write.shared", "memory/delete", "memory/admin"];
const DAY = 86400000;

function boxes(names, chosen, prefix) {
  return names.map((n) => checkbox(n, chosen.includes(n), { "data-value": n, id: `${prefix}-${n.replace(/[^a-z]/g, "-")}` }));
}
function picked(list) {
  return list.map((b) => b.querySelector("input")).filter((b) => b.checked).map((b) => b.dataset.value);
}
const quietly = (promise) => promise.catch(() => {});

export function workspaceView(app) {
  const root = h("div", { class: "workspace" });
  const section = (id, title) => h("section", { id, class: "panel", "aria-labelledby": `${id}-title` }, h("h2", { id: `${id}-title` }, title));

  // -- memory on/off --
  const feature = section("feature", "Memory");
  async function loadFeature() {
    const state = await app.run("Reading the memory feature", () => app.admin("GET", "/memory"));
    clear(feature).append(
      h("h2", { id: "feature-title" }, "Memory"),
      h("p", { id: "memory-state" }, state.enabled ? "Memory is on for this workspace." : "Memory is off: agents cannot read or write here."),
      button(state.enabled ? "Turn memory off" : "Turn memory on", () =>
        quietly(app.run("Switching", () => app.admin("PUT", "/memory", { enabled: !state.enabled })).then(loadFeature)), { id: "toggle-memory" }),
    );
  }

  // -- members --
  const members = section("members", "Members");
  async function loadMembers() {
    const { members: list } = await app.run("Listing members", () => app.admin("GET", "/members"));
    clear(members).append(h("h2", { id: "members-title" }, "Members"));
    const table = h("table", {}, h("thead", {}, h("tr", {}, ["handle", "kind", "subject", "grants", ""].map((t) => h("th", { scope: "col" }, t)))));
    const body = h("tbody");
    for (const m of list) {
      const grantBoxes = boxes(GRANTS, m.grants, `grant-${m.principal_id}`);
      body.append(
        h(
          "tr",
          {},
          h("td", {}, m.handle || "—"),
          h("td", {}, m.agent_key ? "agent key" : m.kind),
          h("td", { class: "mono" }, m.subject),
          h("td", {}, h("fieldset", { class: "inline" }, h("legend", { class: "sr-only" }, `Grants of ${m.handle || m.subject}`), grantBoxes)),
          h(
            "td",
            {},
            button("Save grants", () => quietly(app.run("Saving grants", () => app.admin("PUT", `/members/${encodeURIComponent(m.subject)}`, { grants: picked(grantBoxes) })).then(loadMembers)), { "aria-label": `Save grants of ${m.handle || m.subject}` }),
            m.agent_key ? null : button("Remove", () => quietly(app.run("Removing", () => app.admin("DELETE", `/members/${encodeURIComponent(m.subject)}`)).then(loadMembers)), { "aria-label": `Remove ${m.handle || m.subject}`, class: "danger" }),
          ),
        ),
      );
    }
    table.append(body);
    members.append(h("div", { class: "scroll" }, table));
  }

  // -- invitations --
  const invitations = section("invitations", "Invitations");
  async function loadInvitations() {
    const { invitations: list } = await app.run("Listing invitations", () => app.admin("GET", "/invitations"));
    clear(invitations).append(h("h2", { id: "invitations-title" }, "Invitations"));
    const ul = h("ul", { id: "invitation-list" });
    for (const inv of list) {
      ul.append(h("li", {}, `${inv.subject}: ${inv.grants.join(", ")} · expires ${when(inv.expires_at)} `,
        button("Withdraw", () => quietly(app.run("Withdrawing", () => app.admin("DELETE", `/invitations/${inv.id}`)).then(loadInvitations)), { "aria-label": `Withdraw the invitation of ${inv.subject}` })));
    }
    if (!list.length) ul.append(h("li", {}, "No pending invitations."));
    const subject = h("input", { id: "invite-subject", required: true, autocomplete: "off" });
    const grantBoxes = boxes(GRANTS, ["read"], "invite");
    invitations.append(
      ul,
      h(
        "form",
        { on: { submit: (e) => { e.preventDefault(); quietly(app.run("Inviting", () => app.admin("POST", "/invitations", { subject: subject.value.trim(), grants: picked(grantBoxes) })).then(loadInvitations)); } } },
        field("Subject (the person's sign-in id, or a service's client id)", subject),
        h("fieldset", {}, h("legend", {}, "Grants"), grantBoxes),
        h("button", { type: "submit", id: "invite" }, "Invite"),
      ),
    );
  }

  // -- agent keys --
  const keys = section("keys", "Agent keys");
  async function loadKeys(secret) {
    const { agent_keys: list } = await app.run("Listing agent keys", () => app.admin("GET", "/agent-keys"));
    clear(keys).append(h("h2", { id: "keys-title" }, "Agent keys"));
    if (secret) {
      const box = h(
        "div",
        { class: "secret", id: "new-secret", role: "group", "aria-label": "The new key's secret" },
        h("p", {}, "The secret is shown this once: copy it now. The service does not keep it."),
        h("dl", {}, h("dt", {}, "Client id"), h("dd", { class: "mono", id: "new-client-id" }, secret.client_id), h("dt", {}, "Client secret"), h("dd", { class: "mono", id: "new-client-secret" }, secret.client_secret)),
        button("I have copied it", () => box.remove(), { id: "secret-done" }),
      );
      keys.append(box);
    }
    const ul = h("ul", { id: "key-list" });
    for (const k of list) {
      ul.append(h("li", { "data-client-id": k.client_id }, `${k.name} · ${k.scopes.join(" ")} · ${when(k.created_at)} `,
        button("Revoke", () => quietly(app.run("Revoking", () => app.admin("DELETE", `/agent-keys/${encodeURIComponent(k.client_id)}`)).then(() => loadKeys())), { "aria-label": `Revoke ${k.name}`, class: "danger" })));
    }
    if (!list.length) ul.append(h("li", {}, "No agent keys."));
    const name = h("input", { id: "key-name", required: true, autocomplete: "off", pattern: "[a-z0-9][a-z0-9-]*" });
    const scopeBoxes = boxes(SCOPES, ["memory/read"], "key");
    keys.append(
      ul,
      h(
        "form",
        { on: { submit: async (e) => {
          e.preventDefault();
          try {
            const made = await app.run("Creating the key", () => app.admin("POST", "/agent-keys", { name: name.value.trim(), scopes: picked(scopeBoxes) }));
            await loadKeys(made);
          } catch { /* shown */ }
        } } },
        field("Name", name, "lowercase letters, digits and -"),
        h("fieldset", {}, h("legend", {}, "Scopes"), scopeBoxes),
        h("button", { type: "submit", id: "create-key" }, "Create key"),
      ),
    );
  }

  // -- private channels and DMs --
  const contexts = section("contexts", "Private channels and DMs");
  async function loadContexts() {
    const answer = await app.run("Listing contexts", () => app.admin("GET", "/contexts"));
    clear(contexts).append(h("h2", { id: "contexts-title" }, "Private channels and DMs"),
      h("p", { class: "hint" }, "Only a private context's own members change or unregister it; any admin may delete its records wholesale without reading them."));
    const ul = h("ul", { id: "context-list" });
    for (const c of answer.contexts) {
      const path = `/contexts/${encodeURIComponent(c.context)}`;
      ul.append(h("li", {}, `${c.context} (${c.kind}) · members: ${c.members ? c.members.join(", ") : "hidden: you are not in it"} `,
        button("Unregister", () => quietly(app.run("Unregistering", () => app.admin("DELETE", path)).then(loadContexts)), { "aria-label": `Unregister ${c.context}` }),
        button("Delete its records…", () => {
          const confirm = h("span", { class: "confirm" }, " Delete every record of it for good? ",
            button("Delete for good", () => quietly(app.run("Deleting", () => app.admin("DELETE", `${path}/records`)).then(loadContexts)), { class: "danger" }),
            button("Keep", () => confirm.remove()));
          ul.append(confirm);
        }, { class: "danger", "aria-label": `Delete the records of ${c.context}` })));
    }
    if (!answer.contexts.length) ul.append(h("li", {}, "None registered."));
    const inUse = h("p", {}, "Holding shared records: ", answer.in_use.map((u) => `${u.context} (${u.records})`).join(", ") || "none");
    const key = h("input", { id: "context-key", required: true, placeholder: "channel:leads or dm:alice-bob", autocomplete: "off" });
    const who = h("input", { id: "context-members", required: true, autocomplete: "off" });
    contexts.append(
      ul,
      inUse,
      h(
        "form",
        { on: { submit: (e) => { e.preventDefault(); quietly(app.run("Registering", () => app.admin("PUT", `/contexts/${encodeURIComponent(key.value.trim())}`, { members: who.value.split(",").map((s) => s.trim()).filter(Boolean) })).then(loadContexts)); } } },
        field("Context", key),
        field("Members", who, "subjects, comma-separated"),
        h("button", { type: "submit", id: "register-context" }, "Register"),
      ),
    );
  }

  // -- audit trail and chart --
  const audit = section("audit", "Audit trail");
  const chartBox = section("chart", "Changes per day, last 30 days");
  let events = [];
  let cursor = null;
  const operation = h("select", { id: "filter-operation" }, h("option", { value: "" }, "any"));
  const writerFilter = h("input", { id: "filter-writer", type: "search", autocomplete: "off" });
  const recordFilter = h("input", { id: "filter-record", type: "search", autocomplete: "off" });
  const rows = h("tbody", { id: "audit-rows" });
  const more = h("p");
  function showAudit() {
    const ops = [...new Set(events.map((e) => e.operation))].sort();
    const chosen = operation.value;
    append(clear(operation), [h("option", { value: "" }, "any"), ops.map((o) => h("option", { value: o, selected: o === chosen }, o))]);
    const w = writerFilter.value.trim().toLowerCase();
    const r = recordFilter.value.trim().toLowerCase();
    const shown = events.filter((e) =>
      (!chosen || e.operation === chosen) &&
      (!w || (e.actor_handle || "").toLowerCase().includes(w) || e.actor.includes(w)) &&
      (!r || (e.record_id || "").includes(r) || e.uri.toLowerCase().includes(r)));
    append(clear(rows), shown.map((e) => h("tr", {}, h("td", {}, when(e.time)), h("td", {}, e.operation), h("td", {}, writer(e.actor_handle, e.actor_kind, e.actor)), h("td", { class: "mono" }, e.uri), h("td", {}, String(e.revision)), h("td", {}, e.source || ""))));
    if (!shown.length) rows.append(h("tr", {}, h("td", { colspan: 6 }, events.length ? "No event on the loaded pages matches." : "No events.")));
    clear(more).append(`${shown.length} of ${events.length} loaded events shown. `, cursor ? button("Load more", () => quietly(loadAudit(true)), { id: "audit-more" }) : "That is the whole trail.");
  }
  async function loadAudit(next) {
    const query = new URLSearchParams({ limit: "50" });
    if (next && cursor) query.set("cursor", cursor);
    const page = await app.run("Reading the audit trail", () => app.admin("GET", `/audit?${query}`));
    events = next ? events.concat(page.events) : page.events;
    cursor = page.next_cursor;
    showAudit();
  }
  for (const input of [operation, writerFilter, recordFilter]) input.addEventListener("input", showAudit);
  audit.append(
    h("form", { class: "row", on: { submit: (e) => e.preventDefault() } },
      field("Operation", operation), field("Writer", writerFilter), field("Record (id or address)", recordFilter)),
    h("p", { class: "hint" }, "Filters apply to the pages loaded so far; load more to look further back."),
    h("div", { class: "scroll" }, h("table", { id: "audit-table" }, h("thead", {}, h("tr", {}, ["when", "operation", "writer", "record", "revision", "source"].map((t) => h("th", { scope: "col" }, t)))), rows)),
    more,
  );
  async function loadChart() {
    const since = Date.now() - 30 * DAY;
    let all = [];
    let next = null;
    // Newest first: read pages until one reaches back past 30 days (at most 25 pages).
    for (let i = 0; i < 25; i++) {
      const query = new URLSearchParams({ limit: "200" });
      if (next) query.set("cursor", next);
      const page = await app.run("Counting changes", () => app.admin("GET", `/audit?${query}`));
      all = all.concat(page.events);
      next = page.next_cursor;
      if (!next || !page.events.length || Date.parse(page.events[page.events.length - 1].time) < since) break;
    }
    clear(chartBox).append(h("h2", { id: "chart-title" }, "Changes per day, last 30 days"), renderChart(all));
  }

  const scopesNote = app.memoryOff ? h("p", { class: "notice" }, "Memory is off in this workspace: turn it on to use My memory.") : null;
  append(root, [scopesNote, feature, members, invitations, keys, contexts, chartBox, audit]);
  quietly(Promise.all([loadFeature(), loadMembers(), loadInvitations(), loadKeys(), loadContexts(), loadAudit(false), loadChart()]));
  return root;
}
