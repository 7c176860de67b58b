// "My memory": browse, search, read with history and diffs, and change records,
// through the MCP tools only. Record content is rendered as text nodes (plain) or by
// markdown.js (which builds elements, never parses HTML).

import { h, clear, field, select, checkbox, button, when, writer } from "./ui.js";
import { renderMarkdown } from "./markdown.js";
import { renderDiff } from "./diff.js";

const KINDS = ["memories", "notes", "skills"];
const FULL = 65536;

function expiryValue(input) {
  if (!input.value) return null;
  return new Date(input.value).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function key() {
  return `console-${crypto.randomUUID()}`;
}

export function memoryView(app) {
  const root = h("div", { class: "memory" });
  const scopes = app.scopes;
  const side = h("div", { class: "side" });
  const detail = h("section", { class: "detail", id: "detail", "aria-label": "Record", tabindex: "-1" });

  // -- who is asking, who can hear --
  side.append(
    h(
      "section",
      { class: "scopes", "aria-labelledby": "scopes-title" },
      h("h2", { id: "scopes-title" }, "Listening from"),
      h(
        "dl",
        {},
        h("dt", {}, "Workspace"), h("dd", {}, scopes.workspace),
        h("dt", {}, "You"), h("dd", {}, `${scopes.principal.handle} (${scopes.principal.kind})`),
        h("dt", {}, "Grants"), h("dd", { id: "grants" }, scopes.grants.join(", ") || "none"),
        h("dt", {}, "Context"), h("dd", {}, scopes.context),
        h("dt", {}, "In view"), h("dd", {}, scopes.visible_contexts.join(" → ")),
        h("dt", {}, "Personal space"), h("dd", {}, scopes.personal_namespace ? "yes" : "no"),
      ),
    ),
  );

  // -- browse --
  const namespace = select([["all", "everything"], ["me", "personal (me)"], ["workspace", "shared (workspace)"]], "all", { id: "browse-namespace" });
  const kind = select([["", "every kind"], ...KINDS.map((k) => [k, k])], "", { id: "browse-kind" });
  const folder = h("input", { id: "browse-folder", placeholder: "projects/", autocomplete: "off" });
  const list = h("ul", { class: "items", id: "items", "aria-label": "Records" });
  const more = h("p");
  let cursor = null;
  const prefix = () => {
    if (namespace.value === "all") return "memory://";
    let p = `memory://${namespace.value}/`;
    if (kind.value) {
      p += `${kind.value}/`;
      const f = folder.value.trim().replace(/^\/+/, "");
      if (f) p += f.endsWith("/") ? f : `${f}/`;
    }
    return p;
  };
  async function browse(append) {
    if (!append) cursor = null;
    const args = { prefix: prefix(), limit: 50 };
    if (cursor) args.cursor = cursor;
    const page = await app.run("Listing", () => app.tool("memory_list", args));
    if (!append) clear(list);
    for (const item of page.items) {
      list.append(
        h(
          "li",
          {},
          button(item.title || item.uri, () => openRecord(item.uri, item.id), { class: "link", "data-uri": item.uri }),
          h("span", { class: "meta" }, `${item.uri} · ${item.context} · r${item.revision} · ${when(item.updated_at)}`),
          item.pinned ? h("span", { class: "badge" }, "pinned") : null,
          item.expires_at ? h("span", { class: "badge" }, `expires ${when(item.expires_at)}`) : null,
        ),
      );
    }
    if (!list.firstChild) list.append(h("li", {}, "Nothing here."));
    cursor = page.next_cursor;
    clear(more);
    if (cursor) more.append(button("More", () => browse(true).catch(() => {})));
  }
  side.append(
    h(
      "section",
      { "aria-labelledby": "browse-title" },
      h("h2", { id: "browse-title" }, "Browse"),
      h(
        "form",
        { class: "row", on: { submit: (e) => { e.preventDefault(); browse(false).catch(() => {}); } } },
        field("Namespace", namespace),
        field("Kind", kind),
        field("Folder", folder, "with a kind"),
        h("button", { type: "submit", id: "browse" }, "List"),
      ),
      list,
      more,
    ),
  );

  // -- search --
  const query = h("input", { id: "search-query", type: "search", required: true, maxlength: 512 });
  const searchNs = select([["all", "everything"], ["personal", "personal"], ["workspace", "shared"]], "all", { id: "search-namespace" });
  const kindBoxes = KINDS.map((k) => checkbox(k, k !== "skills", { "data-kind": k }));
  const hits = h("ol", { class: "hits", id: "hits", "aria-label": "Search results" });
  async function search() {
    const kinds = kindBoxes.map((b) => b.querySelector("input")).filter((b) => b.checked).map((b) => b.dataset.kind);
    const answer = await app.run("Searching", () =>
      app.tool("memory_search", { query: query.value, namespace: searchNs.value, kinds: kinds.length ? kinds : ["memories", "notes"], limit: 8 }),
    );
    clear(hits);
    for (const hit of answer.hits) {
      hits.append(
        h(
          "li",
          {},
          button(hit.title || hit.uri, () => openRecord(hit.uri, hit.id), { class: "link" }),
          h("span", { class: "score" }, `score ${hit.score.toFixed(3)}`),
          h("span", { class: "meta" }, `${hit.uri} · ${hit.context}`),
          h("p", { class: "excerpt" }, hit.excerpt),
        ),
      );
    }
    if (!answer.hits.length) hits.append(h("li", {}, "No record in view holds any of these words."));
  }
  side.append(
    h(
      "section",
      { "aria-labelledby": "search-title" },
      h("h2", { id: "search-title" }, "Search"),
      h(
        "form",
        { on: { submit: (e) => { e.preventDefault(); search().catch(() => {}); } } },
        field("Search for", query),
        field("In", searchNs),
        h("fieldset", {}, h("legend", {}, "Kinds"), kindBoxes),
        h("button", { type: "submit", id: "search" }, "Search"),
      ),
      hits,
    ),
  );

  // -- create, remember --
  const writable = app.can("write:personal") || app.can("write:shared");
  if (writable) side.append(createForm(), rememberForm());

  function nsOptions() {
    const out = [];
    if (app.can("write:personal") && scopes.personal_namespace) out.push(["me", "personal (me)"]);
    if (app.can("write:shared")) out.push(["workspace", "shared (workspace)"]);
    return out;
  }

  function createForm() {
    const ns = select(nsOptions(), nsOptions()[0] && nsOptions()[0][0], { id: "new-namespace" });
    const k = select(KINDS.map((x) => [x, x]), "memories", { id: "new-kind" });
    const path = h("input", { id: "new-path", required: true, placeholder: "projects/alpha.md", autocomplete: "off" });
    const content = h("textarea", { id: "new-content", rows: 6, required: true });
    const ctx = select(scopes.visible_contexts.map((c) => [c, c]), scopes.context, { id: "new-context" });
    const pinned = checkbox("Pinned (leads the briefing)", false, { id: "new-pinned" });
    const expires = h("input", { id: "new-expires", type: "datetime-local" });
    const form = h(
      "form",
      {
        on: {
          submit: async (e) => {
            e.preventDefault();
            const uri = `memory://${ns.value}/${k.value}/${path.value.trim()}`;
            const args = { uri, content: content.value, expected_revision: 0, context: ctx.value, source: "console" };
            if (pinned.querySelector("input").checked) args.pinned = true;
            const expiry = expiryValue(expires);
            if (expiry) args.expires_at = expiry;
            try {
              const made = await app.run("Creating", () => app.tool("memory_write", args));
              form.reset();
              app.say(`Created ${made.uri}`);
              await openRecord(made.uri, made.id);
            } catch {
              /* shown */
            }
          },
        },
      },
      field("Namespace", ns),
      field("Kind", k),
      field("Path", path, "folders/name.md"),
      field("Context", ctx),
      field("Content", content),
      pinned,
      field("Expires (optional)", expires),
      h("button", { type: "submit", id: "create" }, "Create"),
    );
    return h("details", { class: "panel" }, h("summary", {}, "New record"), form);
  }

  function rememberForm() {
    const uri = h("input", { id: "fact-uri", required: true, value: app.can("write:personal") ? "memory://me/memories/facts.md" : "memory://workspace/memories/facts.md" });
    const fact = h("input", { id: "fact-text", required: true, maxlength: 4096 });
    const expires = h("input", { id: "fact-expires", type: "datetime-local" });
    const form = h(
      "form",
      {
        on: {
          submit: async (e) => {
            e.preventDefault();
            const args = { uri: uri.value.trim(), fact: fact.value, idempotency_key: key(), source: "console" };
            const expiry = expiryValue(expires);
            if (expiry) args.expires_at = expiry;
            try {
              const done = await app.run("Remembering", () => app.tool("memory_remember", args));
              app.say(done.merged ? `Remembered in ${done.uri}` : `${done.uri} already says this`);
              fact.value = "";
              await openRecord(done.uri, done.id);
            } catch {
              /* shown */
            }
          },
        },
      },
      field("Record", uri),
      field("Fact (one line)", fact),
      field("Expires (optional)", expires),
      h("button", { type: "submit", id: "remember" }, "Remember"),
    );
    return h("details", { class: "panel" }, h("summary", {}, "Remember a fact"), form);
  }

  // -- one record --
  async function openRecord(uri, id) {
    const address = id ? `memory://record/${id}` : uri;
    const record = await app.run("Reading", () => app.tool("memory_read", { uri: address, history: true, max_bytes: FULL }));
    showRecord(record);
  }

  function contentBlock(text, label) {
    const box = h("div", { class: "content", "data-label": label });
    const plain = () => h("pre", { class: "plain" }, text);
    let rendered = true;
    const body = h("div", {}, renderMarkdown(text));
    const toggle = button("Show plain text", () => {
      rendered = !rendered;
      clear(body).append(rendered ? renderMarkdown(text) : plain());
      toggle.textContent = rendered ? "Show plain text" : "Show rendered Markdown";
    }, { class: "quiet" });
    box.append(toggle, body);
    return box;
  }

  function showRecord(record) {
    clear(detail);
    const canWrite = app.canWrite(record.uri);
    const canDelete = canWrite && app.can("delete");
    const address = `memory://record/${record.id}`;
    detail.append(
      h("h2", { id: "record-title" }, record.title || record.uri),
      h(
        "dl",
        { class: "facts" },
        h("dt", {}, "Address"), h("dd", { id: "record-uri" }, record.uri),
        h("dt", {}, "Id"), h("dd", {}, record.id),
        h("dt", {}, "Context"), h("dd", {}, record.context),
        h("dt", {}, "Revision"), h("dd", { id: "record-revision" }, String(record.revision)),
        h("dt", {}, "Updated"), h("dd", {}, `${when(record.updated_at)} by ${writer(record.updated_by, record.updated_by_kind)}`),
        h("dt", {}, "Created"), h("dd", {}, `${when(record.created_at)} by ${writer(record.created_by, record.created_by_kind)}`),
        h("dt", {}, "Source"), h("dd", {}, record.source || "—"),
        h("dt", {}, "Pinned"), h("dd", { id: "record-pinned" }, record.pinned ? "yes" : "no"),
        h("dt", {}, "Expires"), h("dd", { id: "record-expires" }, record.expires_at ? when(record.expires_at) : "never"),
      ),
      contentBlock(record.content, "current"),
    );
    const actions = h("div", { class: "actions", id: "actions" });
    const reopen = () => openRecord(record.uri, record.id);
    const change = async (label, tool, args) => {
      try {
        await app.run(label, () => app.tool(tool, args));
        await reopen();
      } catch {
        /* shown */
      }
    };
    const rewrite = (extra) => ({ uri: address, content: record.content, expected_revision: record.revision, ...extra });
    if (canWrite) {
      actions.append(
        button("Edit", () => edit(record, record.content, record.revision), { id: "edit" }),
        button(record.pinned ? "Unpin" : "Pin", () => change(record.pinned ? "Unpinning" : "Pinning", "memory_write", rewrite({ pinned: !record.pinned })), { id: "pin" }),
      );
      const expires = h("input", { id: "expires", type: "datetime-local" });
      actions.append(
        h(
          "form",
          { class: "row", on: { submit: (e) => { e.preventDefault(); change("Setting the expiry", "memory_write", rewrite({ expires_at: expiryValue(expires) })); } } },
          field("Expires at", expires),
          h("button", { type: "submit", id: "set-expiry" }, "Set expiry"),
          record.expires_at ? button("Clear expiry", () => change("Clearing the expiry", "memory_write", rewrite({ expires_at: null })), { id: "clear-expiry" }) : null,
        ),
      );
      const target = h("input", { id: "move-to", value: record.uri, required: true });
      actions.append(
        h(
          "form",
          { class: "row", on: { submit: async (e) => {
            e.preventDefault();
            try {
              const moved = await app.run("Moving", () => app.tool("memory_move", { uri: address, new_uri: target.value.trim(), expected_revision: record.revision }));
              await openRecord(moved.uri, moved.id);
            } catch { /* shown */ }
          } } },
          field("Move to", target),
          h("button", { type: "submit", id: "move" }, "Move"),
        ),
      );
      const fact = h("input", { id: "correct-fact", required: true, maxlength: 4096 });
      const lines = record.content.split("\n").filter((l) => /^\s*[-*]\s+/.test(l)).map((l) => l.replace(/^\s*[-*]\s+/, "").trim());
      const old = h("select", { id: "correct-old" }, h("option", { value: "" }, "(add a new fact)"), lines.map((l) => h("option", { value: l }, l)));
      actions.append(
        h(
          "form",
          { class: "row", on: { submit: (e) => {
            e.preventDefault();
            const args = { uri: record.uri, fact: fact.value, idempotency_key: key(), context: record.context, source: "console" };
            if (old.value) args.supersedes = old.value;
            change(old.value ? "Correcting" : "Remembering", "memory_remember", args);
          } } },
          field("Replaces", old),
          field("Fact", fact),
          h("button", { type: "submit", id: "correct" }, "Add or correct fact"),
        ),
      );
    }
    if (canDelete) {
      actions.append(
        button("Delete…", () => {
          const confirm = h(
            "div",
            { class: "confirm", role: "group", "aria-label": "Confirm delete" },
            h("p", {}, "Delete this record for good? Every revision's content is purged."),
            button("Delete for good", () => change("Deleting", "memory_delete", { uri: address, expected_revision: record.revision }).then(() => {
              clear(detail).append(h("p", { id: "deleted" }, `Deleted ${record.uri}.`));
            }), { id: "confirm-delete", class: "danger" }),
            button("Keep it", () => confirm.remove()),
          );
          actions.append(confirm);
          confirm.querySelector("button").focus();
        }, { id: "delete" }),
      );
    }
    if (actions.firstChild) detail.append(h("h3", {}, "Change"), actions);
    detail.append(historyBlock(record));
    detail.focus();
  }

  function historyBlock(record) {
    const box = h("section", { "aria-labelledby": "history-title" }, h("h3", { id: "history-title" }, "History"));
    const shown = h("div", { id: "revision-view" });
    const revisionAddress = (n) => `memory://record/${record.id}/revisions/${n}`;
    const readable = (record.history || []).filter((e) => !["delete", "expire"].includes(e.operation));
    const table = h(
      "table",
      { class: "history" },
      h("thead", {}, h("tr", {}, ["revision", "operation", "when", "by", "source", ""].map((t) => h("th", { scope: "col" }, t)))),
      h(
        "tbody",
        {},
        (record.history || []).map((e) =>
          h(
            "tr",
            {},
            h("td", {}, String(e.revision)),
            h("td", {}, e.operation),
            h("td", {}, when(e.at)),
            h("td", {}, writer(e.by, e.by_kind)),
            h("td", {}, e.source || ""),
            h("td", {}, readable.includes(e) ? button(`View r${e.revision}`, async () => {
              const rev = await app.run("Reading the revision", () => app.tool("memory_read", { uri: revisionAddress(e.revision), max_bytes: FULL }));
              clear(shown).append(h("h4", {}, `Revision ${e.revision}`), contentBlock(rev.content, `revision ${e.revision}`));
            }, { class: "quiet" }) : ""),
          ),
        ),
      ),
    );
    box.append(table, shown);
    if (readable.length >= 2) {
      const revs = readable.map((e) => [String(e.revision), `r${e.revision} (${e.operation})`]);
      const from = select(revs, revs[1][0], { id: "diff-from" });
      const to = select(revs, revs[0][0], { id: "diff-to" });
      const out = h("div", { id: "diff-view" });
      box.append(
        h(
          "form",
          { class: "row", on: { submit: async (e) => {
            e.preventDefault();
            const [a, b] = await app.run("Comparing", () => Promise.all([from.value, to.value].map((n) => app.tool("memory_read", { uri: revisionAddress(n), max_bytes: FULL }))));
            clear(out).append(renderDiff(a.content, b.content, `Changes from r${from.value} to r${to.value}`));
          } } },
          field("From", from),
          field("To", to),
          h("button", { type: "submit", id: "compare" }, "Compare"),
        ),
        out,
      );
    }
    return box;
  }

  function edit(record, text, base) {
    clear(detail);
    const address = `memory://record/${record.id}`;
    const area = h("textarea", { id: "edit-content", rows: 14 }, text);
    const form = h(
      "form",
      { on: { submit: async (e) => {
        e.preventDefault();
        const mine = area.value;
        try {
          await app.run("Saving", () => app.tool("memory_write", { uri: address, content: mine, expected_revision: base, source: "console" }));
          await openRecord(record.uri, record.id);
        } catch (error) {
          if (error.code === "revision_conflict") await conflict(record, mine);
        }
      } } },
      h("h2", {}, `Editing ${record.title || record.uri}`),
      h("p", {}, `Based on revision ${base}.`),
      field("Content", area),
      h("button", { type: "submit", id: "save" }, "Save"),
      button("Cancel", () => openRecord(record.uri, record.id), { class: "quiet" }),
    );
    detail.append(form);
    area.focus();
  }

  async function conflict(record, mine) {
    const theirs = await app.run("Reading the current version", () => app.tool("memory_read", { uri: `memory://record/${record.id}`, history: true, max_bytes: FULL }));
    clear(detail);
    detail.append(
      h(
        "section",
        { class: "conflict", id: "conflict", "aria-labelledby": "conflict-title" },
        h("h2", { id: "conflict-title" }, "Someone else changed this record"),
        h("p", {}, `It is now at revision ${theirs.revision} (by ${writer(theirs.updated_by, theirs.updated_by_kind)}, ${when(theirs.updated_at)}). Choose what to keep.`),
        h(
          "div",
          { class: "two" },
          h("div", {}, h("h3", {}, "Your version"), h("pre", { class: "plain", id: "conflict-mine" }, mine)),
          h("div", {}, h("h3", {}, `Their version (r${theirs.revision})`), h("pre", { class: "plain", id: "conflict-theirs" }, theirs.content)),
        ),
        h("h3", {}, "From theirs to yours"),
        renderDiff(theirs.content, mine, "From their version to yours"),
        h(
          "div",
          { class: "actions" },
          button("Keep mine", async () => {
            try {
              await app.run("Saving yours", () => app.tool("memory_write", { uri: `memory://record/${record.id}`, content: mine, expected_revision: theirs.revision, source: "console" }));
              await openRecord(record.uri, record.id);
            } catch (error) {
              if (error.code === "revision_conflict") await conflict(record, mine);
            }
          }, { id: "keep-mine" }),
          button("Keep theirs", () => showRecord(theirs), { id: "keep-theirs" }),
          button("Edit mine on top of theirs", () => edit(theirs, mine, theirs.revision), { id: "merge-edit" }),
        ),
      ),
    );
    detail.focus();
  }

  root.append(side, detail);
  if (scopes.grants.includes("read")) browse(false).catch(() => {});
  return root;
}
