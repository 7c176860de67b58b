// Sign-in (authorization code + PKCE against the product's authorization server) and
// the two APIs the console uses: the MCP endpoint (JSON-RPC, 2026-07-28) and the admin
// API. Tokens live in sessionStorage only (this tab, until it closes or signs out).

const PROTOCOL = "2026-07-28";
const TOKENS = "console.tokens";
const PENDING = "console.pending";
export const SCOPES = [
  "memory/read",
  "memory/write.personal",
  "memory/write.shared",
  "memory/delete",
  "memory/admin",
];

export class ApiError extends Error {
  constructor(code, message, extra = {}) {
    super(message);
    this.code = code;
    Object.assign(this, extra);
  }
}

// What a person reads for each error the API can answer.
export function explain(error) {
  const code = error && error.code;
  const texts = {
    revision_conflict: `Someone changed this record since you opened it (it is now at revision ${error.current_revision}).`,
    permission_denied: "Your grants here do not allow this. A workspace admin can change them.",
    context_unavailable:
      "You cannot listen from this context: it is a private channel or a DM you are not in.",
    unavailable: "The service is unavailable for a moment. Retrying is safe.",
    timeout: "The service took too long to answer. Retrying is safe.",
    not_a_member:
      "No such workspace here: it does not exist, you are not a member, or its memory is off.",
    signed_out: "Your sign-in has ended. Sign in again.",
    not_found: "Not found: it does not exist, was deleted or expired, or is not in your view.",
    already_exists: "Something already exists at that address.",
    invalid_argument: "The service refused the input.",
    invalid_request: "The service refused the input.",
    too_large: "That is larger than the service accepts.",
    network: "The service could not be reached. Check the connection and retry.",
  };
  const base = texts[code] || `The service answered: ${code || "an error"}.`;
  const detail = error && error.message && error.message !== base ? ` (${error.message})` : "";
  return base + detail;
}

export function retryable(error) {
  return ["unavailable", "timeout", "network"].includes(error && error.code);
}

function b64url(bytes) {
  let text = "";
  for (const b of new Uint8Array(bytes)) text += String.fromCharCode(b);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function random(n = 32) {
  return b64url(crypto.getRandomValues(new Uint8Array(n)));
}

let config = null;
export async function loadConfig() {
  if (!config) {
    const response = await fetch("config.json", { cache: "no-store" });
    if (!response.ok) throw new ApiError("unavailable", "the console's configuration");
    config = await response.json();
  }
  return config;
}

export function redirectUri() {
  return `${location.origin}/console/`;
}

export async function signIn(readOnly) {
  const { client_id } = await loadConfig();
  const verifier = random(48);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  const state = random(24);
  const scope = readOnly ? "memory/read" : SCOPES.join(" ");
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, scope }));
  const query = new URLSearchParams({
    response_type: "code",
    client_id,
    redirect_uri: redirectUri(),
    scope,
    state,
    code_challenge: b64url(digest),
    code_challenge_method: "S256",
  });
  location.assign(`${location.origin}/authorize?${query}`);
}

async function tokenRequest(form) {
  const { client_id, token_endpoint } = await loadConfig();
  let response;
  try {
    response = await fetch(token_endpoint, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id, ...form }),
      credentials: "omit",
    });
  } catch (e) {
    throw new ApiError("network", String(e));
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new ApiError(body.error || "signed_out", body.error_description || "");
  return body;
}

function keep(answer, scope) {
  const tokens = {
    access_token: answer.access_token,
    refresh_token: answer.refresh_token || (session() || {}).refresh_token,
    expires_at: Date.now() + (answer.expires_in || 3600) * 1000,
    scope,
  };
  sessionStorage.setItem(TOKENS, JSON.stringify(tokens));
  return tokens;
}

// The redirect back from sign-in: ?code=…&state=… (or ?error=…). Returns true when it
// handled one (the address is cleaned either way).
export async function finishSignIn() {
  const params = new URLSearchParams(location.search);
  if (!params.has("code") && !params.has("error")) return false;
  history.replaceState(null, "", "/console/");
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  if (params.has("error")) {
    throw new ApiError(params.get("error"), params.get("error_description") || "sign-in refused");
  }
  if (!pending || params.get("state") !== pending.state) {
    throw new ApiError("invalid_state", "this sign-in was not started here; start again");
  }
  const answer = await tokenRequest({
    grant_type: "authorization_code",
    code: params.get("code"),
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  });
  keep(answer, pending.scope);
  return true;
}

export function session() {
  return JSON.parse(sessionStorage.getItem(TOKENS) || "null");
}

// How long sign-out waits for the revocation endpoint before forgetting the tokens anyway.
const REVOKE_WAIT_MS = 5000;

// Sign-out: the refresh token is revoked at the product's revocation endpoint (RFC 7009;
// it ends the sign-in, not only this tab's copy), then the tab forgets every token. The
// tokens are forgotten whatever the endpoint answers, or if it cannot be reached.
export async function signOut() {
  const tokens = session();
  try {
    if (tokens && tokens.refresh_token) {
      const { client_id } = await loadConfig();
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(), REVOKE_WAIT_MS);
      try {
        await fetch(`${location.origin}/revoke`, {
          method: "POST",
          headers: { "Content-Type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            token: tokens.refresh_token,
            token_type_hint: "refresh_token",
            client_id,
          }),
          credentials: "omit",
          cache: "no-store",
          signal: stop.signal,
        });
      } finally {
        clearTimeout(timer);
      }
    }
  } catch {
    // Offline or refused: nothing more this tab can do; the token ends on its own.
  } finally {
    sessionStorage.clear();
  }
}

async function refresh() {
  const tokens = session();
  if (!tokens || !tokens.refresh_token) return null;
  try {
    return keep(
      await tokenRequest({ grant_type: "refresh_token", refresh_token: tokens.refresh_token }),
      tokens.scope,
    );
  } catch {
    return null;
  }
}

async function send(url, init, retried = false) {
  const tokens = session();
  if (!tokens) throw new ApiError("signed_out", "");
  const headers = { ...init.headers, Authorization: `Bearer ${tokens.access_token}` };
  let response;
  try {
    response = await fetch(url, { ...init, headers, credentials: "omit", cache: "no-store" });
  } catch (e) {
    throw new ApiError("network", String(e));
  }
  if (response.status === 401 && !retried && (await refresh())) {
    return send(url, init, true);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (response.status === 401) throw new ApiError("signed_out", "");
  if (response.status === 503 || response.status === 429) {
    const after = Number(response.headers.get("retry-after") || "1");
    throw new ApiError("unavailable", (body && body.message) || "", { retryAfter: after });
  }
  if (response.status === 404 && !text) throw new ApiError("not_a_member", "");
  return { response, body };
}

function workspacePath(workspace) {
  return `/w/${encodeURIComponent(workspace)}`;
}

let nextId = 1;
// One tool call; its structured result, or an ApiError with the tool's error code.
export async function tool(workspace, context, name, args = {}) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json",
    "MCP-Protocol-Version": PROTOCOL,
    "Mcp-Method": "tools/call",
    "Mcp-Name": name,
  };
  if (context && context !== "workspace") headers["Memory-Context"] = context;
  const message = {
    jsonrpc: "2.0",
    id: nextId++,
    method: "tools/call",
    params: {
      name,
      arguments: args,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
      },
    },
  };
  const { response, body } = await send(`${workspacePath(workspace)}/mcp`, {
    method: "POST",
    headers,
    body: JSON.stringify(message),
  });
  if (response.status === 403) {
    const code = (body && body.error) || "permission_denied";
    throw new ApiError(code, code === "permission_denied" ? "the token lacks the scope" : "");
  }
  if (!body) throw new ApiError("unavailable", `HTTP ${response.status}`);
  if (body.error) throw new ApiError("invalid_request", body.error.message || "");
  const result = body.result || {};
  const structured = result.structuredContent || {};
  if (result.isError) {
    const error = structured.error || {};
    throw new ApiError(error.code || "unavailable", error.message || "", error);
  }
  return structured;
}

// One admin API call: the answer's JSON, or an ApiError with its error code.
export async function admin(workspace, method, path, payload) {
  const init = { method, headers: { Accept: "application/json" } };
  if (payload !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(payload);
  }
  const { response, body } = await send(`${workspacePath(workspace)}/admin${path}`, init);
  if (!response.ok) {
    const code =
      (body && body.error) || (response.status === 403 ? "permission_denied" : "unavailable");
    const problems = ((body && body.problems) || []).map((p) => `${p.field}: ${p.message}`);
    const message = [body && body.message, ...problems].filter(Boolean).join("; ");
    throw new ApiError(code, message, { status: response.status });
  }
  return body;
}
