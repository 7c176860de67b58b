"""``memoryctl``: the admin API, operator commands, export/import and erasure.

Two kinds of command:

- **workspace admin** (``memory``, ``members``, ``invitations``, ``keys``,
  ``contexts``, ``audit``, ``export``, ``import``): HTTP calls with an access token,
  exactly what any client of the admin API or the MCP endpoint could do (``--url``,
  ``--workspace``, ``--token``; or ``--as NAME`` for a token from
  ``.dev/endpoint.json``); ``invitations accept`` is the invitee's, with its own token;
- **operator** (``workspaces``, ``identities``, ``erase``): the owner role's database
  URL (``--database-url``, else ``database_url`` from the endpoint file), plus the
  user pool when one is configured (app clients to delete, people to sign out).

``--json`` prints one JSON document on stdout for scripts; otherwise tables for
people. Long work (export, import) shows a progress bar on stderr. Exit codes: 0
done, 1 refused or failed, 3 an import finished with conflicts or skips.

Run it as ``memoryctl`` once installed (``make install``), or ``python -m memory_cli``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlsplit

import httpx2
import psycopg
import typer
from memory_server.admin.identity import CognitoDirectory, Directory
from memory_server.domain.errors import AdminError
from memory_server.domain.grants import ALL_GRANTS
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from memory_cli import transfer

HANDSHAKE_VERSION = "2025-11-25"  # stateless: any request works without a session
EXIT_FAILED = 1
EXIT_INCOMPLETE = 3

app = typer.Typer(
    help="Administer a memory server: workspaces, members, agent keys, contexts, data.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
memory_app = typer.Typer(help="The workspace's memory feature.", no_args_is_help=True)
members_app = typer.Typer(help="Members and their grants.", no_args_is_help=True)
invitations_app = typer.Typer(
    help="Invitations: how people (and other workspaces' services) join.", no_args_is_help=True
)
keys_app = typer.Typer(help="Agent keys (client-credentials app clients).", no_args_is_help=True)
contexts_app = typer.Typer(help="Private channels and DMs.", no_args_is_help=True)
workspaces_app = typer.Typer(help="Operator: workspaces (owner role).", no_args_is_help=True)
identities_app = typer.Typer(help="Operator: identities (owner role).", no_args_is_help=True)
embeddings_app = typer.Typer(
    help="Operator: hybrid recall's vectors (owner role).", no_args_is_help=True
)
app.add_typer(memory_app, name="memory")
app.add_typer(members_app, name="members")
app.add_typer(invitations_app, name="invitations")
app.add_typer(keys_app, name="keys")
app.add_typer(contexts_app, name="contexts")
app.add_typer(workspaces_app, name="workspaces")
app.add_typer(identities_app, name="identities")
app.add_typer(embeddings_app, name="embeddings")

out = Console()
err = Console(stderr=True)


class Failure(Exception):
    """A refusal or failure to report (message) and exit with ``EXIT_FAILED``."""


# -- configuration --------------------------------------------------------------


@dataclass
class Settings:
    json: bool
    endpoint_file: Path
    url: str | None
    workspace: str | None
    token: str | None
    as_name: str | None
    database_url: str | None

    def endpoint(self) -> dict[str, Any]:
        if self.endpoint_file.exists():
            return dict(json.loads(self.endpoint_file.read_text()))
        return {}

    def api_url(self) -> str:
        if self.url:
            return self.url.rstrip("/")
        info = self.endpoint()
        if info.get("api_url"):
            return str(info["api_url"]).rstrip("/")
        if info.get("url"):
            parts = urlsplit(str(info["url"]))
            return f"{parts.scheme}://{parts.netloc}"
        raise Failure("no API URL: pass --url (or run `make dev` for .dev/endpoint.json)")

    def bearer(self) -> str:
        if self.token:
            return self.token
        tokens = self.endpoint().get("tokens", {})
        if self.as_name:
            if self.as_name not in tokens:
                raise Failure(f"no token named {self.as_name!r} in {self.endpoint_file}")
            return str(tokens[self.as_name])
        raise Failure("no token: pass --token (or --as NAME with a dev endpoint file)")

    def workspace_slug(self) -> str:
        if self.workspace:
            return self.workspace
        raise Failure("no workspace: pass --workspace")

    def owner_url(self) -> str:
        url = self.database_url or self.endpoint().get("database_url")
        if not url:
            raise Failure("no owner database URL: pass --database-url")
        return str(url)

    def directory(self) -> Directory | None:
        """The user pool for operator commands: the dev stack's, else ``USER_POOL_ID``."""
        import boto3

        info = self.endpoint()
        if info.get("user_pool_id") and info.get("aws_endpoint_url"):
            # The dev stack's moto: its fake credentials, never a developer's real ones.
            client = boto3.client(
                "cognito-idp",
                endpoint_url=info["aws_endpoint_url"],
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",  # noqa: S106 - moto's conventional fake
                aws_session_token="testing",  # noqa: S106
            )
            return CognitoDirectory(client, str(info["user_pool_id"]))
        if os.environ.get("USER_POOL_ID"):
            return CognitoDirectory(boto3.client("cognito-idp"), os.environ["USER_POOL_ID"])
        return None


def _settings(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    assert isinstance(settings, Settings)
    return settings


@app.callback()
def main_options(
    ctx: typer.Context,
    json_output: Annotated[bool, typer.Option("--json", help="JSON on stdout")] = False,
    endpoint_file: Annotated[
        Path, typer.Option(envvar="MEMORY_ENDPOINT_FILE", help="Dev stack endpoint file")
    ] = Path(".dev/endpoint.json"),
    url: Annotated[
        str | None, typer.Option(envvar="MEMORY_URL", help="API base URL (no path)")
    ] = None,
    workspace: Annotated[
        str | None, typer.Option("--workspace", "-w", envvar="MEMORY_WORKSPACE")
    ] = None,
    token: Annotated[
        str | None, typer.Option(envvar="MEMORY_TOKEN", help="Bearer access token")
    ] = None,
    as_name: Annotated[
        str | None, typer.Option("--as", help="A token name from the endpoint file")
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(envvar="MEMORY_DATABASE_URL", help="Owner role URL (operator commands)"),
    ] = None,
) -> None:
    ctx.obj = Settings(json_output, endpoint_file, url, workspace, token, as_name, database_url)


# -- output ---------------------------------------------------------------------


def emit(settings: Settings, document: Any, table: Callable[[], Table] | None = None) -> None:
    """One JSON document for scripts; a table (or highlighted JSON) for people."""
    if settings.json:
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
    elif table is None:
        out.print_json(json.dumps(document, ensure_ascii=False))
    else:
        out.print(table())


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(
            *("" if v is None else ", ".join(v) if isinstance(v, list) else str(v) for v in row)
        )
    return table


def _show_list(
    ctx: typer.Context,
    path: str,
    field: str,
    columns: list[tuple[str, str]],
    *,
    title: str | None = None,
) -> None:
    """``GET path``: the document, or a table (titled ``title``, else ``field``) of its
    ``field`` list, one (heading, key) column each."""
    settings = _settings(ctx)
    found = AdminClient(settings).request("GET", path)
    emit(
        settings,
        found,
        lambda: _table(
            title or field,
            [heading for heading, _ in columns],
            [[item[key] for _, key in columns] for item in found[field]],
        ),
    )


@contextmanager
def progress_bar(settings: Settings, what: str) -> Iterator[Callable[[int, int | None], None]]:
    """A bar on stderr: records counted while the total is unknown (listing), then
    done out of the total."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,  # stderr: --json output on stdout stays one clean document
    ) as bar:
        task = bar.add_task(what, total=None)

        def update(done: int, total: int | None) -> None:
            described = f"{what}: listing" if total is None else what
            bar.update(task, description=described, completed=done, total=total)

        yield update


# -- HTTP -----------------------------------------------------------------------


class AdminClient:
    def __init__(self, settings: Settings) -> None:
        self.base = f"{settings.api_url()}/w/{quote(settings.workspace_slug(), safe='')}"
        self.http = httpx2.Client(
            headers={"Authorization": f"Bearer {settings.bearer()}"}, timeout=30.0
        )

    def request(
        self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        response = self.http.request(
            method, f"{self.base}/admin{path}", json=body, params=params or None
        )
        if response.status_code >= 400:
            raise Failure(_explain(response))
        return response.json()


def _explain(response: httpx2.Response) -> str:
    status = response.status_code
    try:
        body = response.json() if response.content else {}
    except ValueError:
        body = {}
    if status == 404 and not response.content:
        return (
            "404: no such workspace, or you are not a member of it "
            "(accepting: no pending invitation of yours with that id there)"
        )
    message = body.get("message") or response.reason_phrase
    problems = "".join(
        f"\n  {p['field']}: {p['message']} ({p['rule']})" for p in body.get("problems", [])
    )
    return f"{status} {body.get('error', '')}: {message}{problems}".replace(" :", ":")


class HttpTools:
    """``transfer.ToolCaller`` over the MCP endpoint (plain JSON-RPC, stateless)."""

    def __init__(self, settings: Settings) -> None:
        self.url = f"{settings.api_url()}/w/{quote(settings.workspace_slug(), safe='')}/mcp"
        self.http = httpx2.Client(
            headers={
                "Authorization": f"Bearer {settings.bearer()}",
                "MCP-Protocol-Version": HANDSHAKE_VERSION,
                "Accept": "application/json, text/event-stream",
            },
            timeout=30.0,
        )
        self.next_id = 0

    def call(self, tool: str, arguments: dict[str, Any], *, context: str) -> dict[str, Any]:
        self.next_id += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        response = self.http.post(self.url, json=message, headers={"Memory-Context": context})
        refused = response.status_code == 403 and response.content
        if refused and response.json().get("error") == "context_unavailable":
            raise transfer.ContextRefused(context)
        if response.status_code != 200:
            raise transfer.TransferError(_explain(response))
        answer = response.json()
        if "error" in answer:
            raise transfer.TransferError(f"{tool}: {answer['error'].get('message')}")
        return dict(answer["result"].get("structuredContent") or {})


# -- the memory feature ---------------------------------------------------------


@memory_app.command("show")
def memory_show(ctx: typer.Context) -> None:
    """Whether the memory feature is on."""
    settings = _settings(ctx)
    emit(settings, AdminClient(settings).request("GET", "/memory"), None)


def _memory(ctx: typer.Context, enabled: bool) -> None:
    settings = _settings(ctx)
    emit(settings, AdminClient(settings).request("PUT", "/memory", {"enabled": enabled}), None)


@memory_app.command("on")
def memory_on(ctx: typer.Context) -> None:
    """Turn the memory feature on."""
    _memory(ctx, True)


@memory_app.command("off")
def memory_off(ctx: typer.Context) -> None:
    """Turn the memory feature off (the MCP endpoint then answers 404)."""
    _memory(ctx, False)


# -- members --------------------------------------------------------------------


@members_app.command("list")
def members_list(ctx: typer.Context) -> None:
    """Members, their grants and personal namespaces."""
    _show_list(
        ctx,
        "/members",
        "members",
        [
            ("subject", "subject"),
            ("handle", "handle"),
            ("kind", "kind"),
            ("grants", "grants"),
            ("personal", "personal_namespace"),
            ("agent key", "agent_key"),
            # Shares its handle with another member (found by an upgrade): rename one.
            ("handle conflict", "handle_conflict"),
        ],
    )


@members_app.command("set")
def members_set(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Cognito sub or app client id")],
    grant: Annotated[
        list[str] | None, typer.Option("--grant", "-g", help=f"One of {', '.join(ALL_GRANTS)}")
    ] = None,
    personal_namespace: Annotated[
        bool | None, typer.Option("--personal-namespace/--no-personal-namespace")
    ] = None,
) -> None:
    """Change a member's grants (the grants given replace the old ones).

    People, and other workspaces' services, join by accepting an invitation
    (``memoryctl invitations create``)."""
    settings = _settings(ctx)
    body: dict[str, Any] = {"grants": grant or []}
    if personal_namespace is not None:
        body["personal_namespace"] = personal_namespace
    member = AdminClient(settings).request("PUT", f"/members/{quote(subject, safe='')}", body)
    emit(settings, member, None)


@members_app.command("remove")
def members_remove(ctx: typer.Context, subject: str) -> None:
    """Remove a member (its personal records stay, unreachable, until it is re-added)."""
    settings = _settings(ctx)
    emit(settings, AdminClient(settings).request("DELETE", f"/members/{quote(subject, safe='')}"))


# -- invitations ----------------------------------------------------------------


@invitations_app.command("create")
def invitations_create(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Cognito sub or app client id")],
    grant: Annotated[
        list[str] | None, typer.Option("--grant", "-g", help=f"One of {', '.join(ALL_GRANTS)}")
    ] = None,
    personal_namespace: Annotated[
        bool | None,
        typer.Option("--personal-namespace/--no-personal-namespace", help="Services only"),
    ] = None,
) -> None:
    """Invite an identity: it becomes a member when it accepts with its own token."""
    settings = _settings(ctx)
    body: dict[str, Any] = {"subject": subject, "grants": grant or []}
    if personal_namespace is not None:
        body["personal_namespace"] = personal_namespace
    made = AdminClient(settings).request("POST", "/invitations", body)
    if settings.json:
        emit(settings, made)
        return
    out.print(f"invitation  {made['id']}   (expires {made['expires_at']})")
    out.print(f"grants      {' '.join(made['grants'])}")
    out.print(
        f"the invitee accepts with:  memoryctl -w {settings.workspace_slug()} "
        f"invitations accept {made['id']}"
    )


@invitations_app.command("list")
def invitations_list(ctx: typer.Context) -> None:
    """Pending invitations."""
    _show_list(
        ctx,
        "/invitations",
        "invitations",
        [
            ("id", "id"),
            ("subject", "subject"),
            ("grants", "grants"),
            ("by", "invited_by"),
            ("by kind", "invited_by_kind"),
            ("expires", "expires_at"),
        ],
    )


@invitations_app.command("revoke")
def invitations_revoke(ctx: typer.Context, invitation_id: str) -> None:
    """Withdraw a pending invitation."""
    settings = _settings(ctx)
    path = f"/invitations/{quote(invitation_id, safe='')}"
    emit(settings, AdminClient(settings).request("DELETE", path))


@invitations_app.command("accept")
def invitations_accept(
    ctx: typer.Context,
    invitation_id: str,
    handle: Annotated[
        str | None,
        typer.Option(help="Your handle, if you are new to the service (shown everywhere)"),
    ] = None,
) -> None:
    """Accept an invitation, as the invitee (your own token): you become a member."""
    settings = _settings(ctx)
    path = f"/invitations/{quote(invitation_id, safe='')}/accept"
    body = {} if handle is None else {"handle": handle}
    emit(settings, AdminClient(settings).request("POST", path, body))


# -- agent keys -----------------------------------------------------------------


@keys_app.command("list")
def keys_list(ctx: typer.Context) -> None:
    """Live agent keys."""
    _show_list(
        ctx,
        "/agent-keys",
        "agent_keys",
        [
            ("client id", "client_id"),
            ("name", "name"),
            ("scopes", "scopes"),
            ("created", "created_at"),
            ("by", "created_by"),
            ("by kind", "created_by_kind"),
        ],
        title="agent keys",
    )


@keys_app.command("create")
def keys_create(
    ctx: typer.Context,
    name: str,
    scope: Annotated[list[str], typer.Option("--scope", "-s", help="memory/… (repeat)")],
    personal_namespace: Annotated[bool, typer.Option("--personal-namespace")] = False,
) -> None:
    """Create an agent key; its secret is printed once and never again."""
    settings = _settings(ctx)
    body = {"name": name, "scopes": scope, "personal_namespace": personal_namespace}
    key = AdminClient(settings).request("POST", "/agent-keys", body)
    if settings.json:
        emit(settings, key)
        return
    out.print(f"client id      {key['client_id']}")
    out.print(f"client secret  {key['client_secret']}   (shown once: store it now)")
    out.print(f"scopes         {' '.join(key['scopes'])}")


@keys_app.command("revoke")
def keys_revoke(ctx: typer.Context, client_id: str) -> None:
    """Revoke an agent key: its tokens stop working at once."""
    settings = _settings(ctx)
    path = f"/agent-keys/{quote(client_id, safe='')}"
    emit(settings, AdminClient(settings).request("DELETE", path))


# -- contexts -------------------------------------------------------------------


@contexts_app.command("list")
def contexts_list(ctx: typer.Context) -> None:
    """Registered contexts and the contexts holding records (the members of a private
    context only where you are one of them)."""
    settings = _settings(ctx)
    found = AdminClient(settings).request("GET", "/contexts")
    emit(
        settings,
        found,
        lambda: _table(
            "contexts",
            ["context", "kind", "members"],
            [
                [
                    c["context"],
                    c["kind"],
                    "(not yours to see)" if c["members"] is None else c["members"],
                ]
                for c in found["contexts"]
            ],
        ),
    )


@contexts_app.command("set")
def contexts_set(
    ctx: typer.Context,
    context: Annotated[str, typer.Argument(help="channel:{id} or dm:{id}")],
    member: Annotated[list[str] | None, typer.Option("--member", "-m")] = None,
) -> None:
    """Register a private channel or DM with exactly these members."""
    settings = _settings(ctx)
    path = f"/contexts/{quote(context, safe=':')}"
    emit(settings, AdminClient(settings).request("PUT", path, {"members": member or []}))


@contexts_app.command("remove")
def contexts_remove(ctx: typer.Context, context: str) -> None:
    """Unregister a private channel (open again) or a DM (unusable): its members only,
    and only while it holds no records."""
    settings = _settings(ctx)
    path = f"/contexts/{quote(context, safe=':')}"
    emit(settings, AdminClient(settings).request("DELETE", path))


@contexts_app.command("delete")
def contexts_delete(
    ctx: typer.Context,
    context: str,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete every record in it")] = False,
) -> None:
    """Delete a private channel or DM wholesale (any admin, in it or not): its records
    purged, its members removed; it stays registered, and nobody's."""
    settings = _settings(ctx)
    if not yes:
        raise Failure(f"this deletes every record of {context!r} and its threads: add --yes")
    path = f"/contexts/{quote(context, safe=':')}/records"
    emit(settings, AdminClient(settings).request("DELETE", path))


# -- audit ----------------------------------------------------------------------


@app.command()
def audit(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option(min=1, max=200)] = 50,
    cursor: Annotated[str | None, typer.Option()] = None,
    all_pages: Annotated[bool, typer.Option("--all", help="Follow every page")] = False,
) -> None:
    """The workspace's audit trail, newest first."""
    settings = _settings(ctx)
    client = AdminClient(settings)
    events: list[dict[str, Any]] = []
    while True:
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        page = client.request("GET", "/audit", params=params)
        events += page["events"]
        cursor = page["next_cursor"]
        if not all_pages or cursor is None:
            break
    emit(
        settings,
        {"events": events, "next_cursor": cursor},
        lambda: _table(
            "audit",
            ["id", "time", "operation", "uri", "actor", "actor kind"],
            [
                [e["id"], e["time"], e["operation"], e["uri"], _actor(e), e["actor_kind"]]
                for e in events
            ],
        ),
    )


def _actor(event: dict[str, Any]) -> str:
    """Who did it: a member's handle, the server itself (an expiry), or the id."""
    if event["actor_handle"]:
        return str(event["actor_handle"])
    return "(the server)" if event["actor"] == str(uuid.UUID(int=0)) else str(event["actor"])


# -- export and import ----------------------------------------------------------


def _registered_contexts(settings: Settings) -> dict[str, Any] | None:
    """The admin API's context list, or None when the token may not read it."""
    try:
        found: dict[str, Any] = AdminClient(settings).request("GET", "/contexts")
    except Failure:
        return None
    return found


@app.command("export")
def export_command(
    ctx: typer.Context,
    folder: Path,
    namespace: Annotated[str, typer.Option(help="workspace or me")] = "workspace",
    context: Annotated[
        list[str] | None, typer.Option("--context", "-c", help="Also this context (repeat)")
    ] = None,
    all_contexts: Annotated[
        bool, typer.Option("--all-contexts", help="Every context holding records (admin)")
    ] = False,
) -> None:
    """Export a namespace as Markdown files with front matter, through the MCP tools."""
    settings = _settings(ctx)
    if namespace not in ("workspace", "me"):
        raise Failure("--namespace must be workspace or me")
    contexts = list(context or [])
    found = _registered_contexts(settings)
    if all_contexts:
        if found is None:
            raise Failure("--all-contexts needs a token with the admin grant")
        contexts += [c["context"] for c in found["in_use"]]
    private = None if found is None else [c["context"] for c in found["contexts"]]
    if private is None:
        err.print(
            "[yellow]note:[/yellow] not an admin here, so which contexts are private is "
            "unknown; import will bring other contexts only where they are registered"
        )
    tools = HttpTools(settings)
    with progress_bar(settings, "exporting") as update:
        report = transfer.export_namespace(
            tools,
            "workspace" if namespace == "workspace" else "me",
            folder,
            contexts,
            private_contexts=private,
            progress=update,
        )
    emit(
        settings,
        report.to_dict(),
        lambda: _table(
            f"exported {report.records} records to {folder}",
            ["file"],
            [[name] for name in report.files]
            + [[f"(skipped context {c}: not yours to hear)"] for c in report.skipped_contexts],
        ),
    )


@app.command("import")
def import_command(ctx: typer.Context, folder: Path) -> None:
    """Import an exported folder: creates what is missing, never overwrites."""
    settings = _settings(ctx)
    if not folder.is_dir():
        raise Failure(f"{folder} is not a folder")
    found = _registered_contexts(settings)
    registered = [] if found is None else [c["context"] for c in found["contexts"]]
    tools = HttpTools(settings)
    with progress_bar(settings, "importing") as update:
        report = transfer.import_folder(tools, folder, registered=registered, progress=update)
    document = report.to_dict()
    emit(
        settings,
        document,
        lambda: _table(
            "import: {created} created, {unchanged} unchanged, {conflict} conflicts, "
            "{skipped} skipped".format(**document),
            ["outcome", "file", "reason"],
            [[f.outcome, f.file, f.reason] for f in report.files],
        ),
    )
    if report.count("conflict") or report.count("skipped"):
        raise typer.Exit(EXIT_INCOMPLETE)


# -- operator commands ----------------------------------------------------------


@contextmanager
def owner_connection(settings: Settings) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(settings.owner_url(), autocommit=True) as conn:
        yield conn


def _embedder() -> Any:
    """EMBEDDER's embedder (runtime.embedder_from_env), else make dev's local model."""
    from memory_server.edge.runtime import embedder_from_env

    spec = os.environ.get("EMBEDDER") or "python:memory_local.embedder:LocalEmbedder"
    embedder = embedder_from_env({**os.environ, "EMBEDDER": spec})
    if embedder is None:
        raise Failure("EMBEDDER is off: nothing to embed with")
    return embedder


@embeddings_app.command("backfill")
def embeddings_backfill(
    ctx: typer.Context,
    limit: int = typer.Option(0, min=0, help="stop after this many records (0: all)"),
) -> None:
    """Embed every record the model has not: after an upgrade, an outage or a change of
    model or dimension (the same step make dev runs at start)."""
    from memory_server.operations.embeddings import backfill

    settings = _settings(ctx)
    embedder = _embedder()
    with progress_bar(settings, f"embedding ({embedder.model})") as update:
        stored, waiting = backfill(
            settings.owner_url(), embedder, progress=update, limit=limit or None
        )
    emit(settings, {"model": embedder.model, "embedded": stored, "waiting": waiting})


@embeddings_app.command("status")
def embeddings_status(ctx: typer.Context) -> None:
    """Records embedded, by model and dimension, and records waiting."""
    from memory_server.data import embeddings

    settings = _settings(ctx)
    with owner_connection(settings) as owner:
        found = embeddings.status(owner)
    emit(settings, {"by_model": found.by_model, "waiting": found.queued})


@workspaces_app.command("list")
def workspaces_list(ctx: typer.Context) -> None:
    """Every workspace with its members, keys and records."""
    settings = _settings(ctx)
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        found = [w.to_dict() for w in operators.list_workspaces(owner)]
    emit(
        settings,
        {"workspaces": found},
        lambda: _table(
            "workspaces",
            ["slug", "memory", "members", "admins", "agent keys", "records", "created"],
            [
                [
                    w["slug"],
                    "on" if w["memory_enabled"] else "off",
                    w["members"],
                    w["admins"],
                    w["agent_keys"],
                    w["records"],
                    w["created_at"],
                ]
                for w in found
            ],
        ),
    )


@workspaces_app.command("create")
def workspaces_create(
    ctx: typer.Context,
    slug: str,
    admin_subject: Annotated[str, typer.Option(help="The first admin's sub or client id")],
    admin_handle: Annotated[str, typer.Option(help="The first admin's display name")],
    admin_kind: Annotated[str, typer.Option(help="person or service")] = "person",
    memory: Annotated[bool, typer.Option("--memory-on/--memory-off")] = False,
) -> None:
    """Create a workspace with its first admin."""
    settings = _settings(ctx)
    if admin_kind not in ("person", "service"):
        raise Failure("--admin-kind must be person or service")
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        made = operators.create_workspace(
            owner,
            slug,
            admin_subject=admin_subject,
            admin_handle=admin_handle,
            admin_kind="person" if admin_kind == "person" else "service",
            memory_enabled=memory,
        )
    emit(settings, made.to_dict())


@workspaces_app.command("delete")
def workspaces_delete(
    ctx: typer.Context,
    slug: str,
    yes: Annotated[bool, typer.Option("--yes", help="Really delete everything in it")] = False,
) -> None:
    """Delete a workspace and all of its data (and its agent keys' app clients)."""
    settings = _settings(ctx)
    if not yes:
        raise Failure(f"this deletes {slug!r} and every record in it: add --yes")
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        gone = operators.delete_workspace(owner, slug, directory=settings.directory())
    emit(settings, gone.to_dict())


@identities_app.command("add")
def identities_add(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Cognito sub or app client id")],
    handle: Annotated[str, typer.Option(help="Display name, shown in every workspace")],
    kind: Annotated[str, typer.Option(help="person or service")] = "person",
) -> None:
    """Make an identity known to the service (unchanged if it is), with the handle it
    shows everywhere: a service must be known before it accepts an invitation (a
    person new to the service names its own handle when it accepts)."""
    settings = _settings(ctx)
    if kind not in ("person", "service"):
        raise Failure("--kind must be person or service")
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        principal = operators.ensure_principal(
            owner, "person" if kind == "person" else "service", subject, handle
        )
    emit(settings, {"subject": subject, "principal_id": str(principal)})


@identities_app.command("rename")
def identities_rename(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="Cognito sub or app client id")],
    handle: Annotated[str, typer.Option(help="The new display name, shown in every workspace")],
) -> None:
    """Give an identity a new handle: refused where another member of one of its
    workspaces holds it (handles are unique in a workspace, compared after Unicode
    normalization, case and look-alike folding). Clears a duplicate an upgrade flagged
    (``handle_conflict`` in the member list)."""
    settings = _settings(ctx)
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        principal = operators.rename_principal(owner, subject, handle)
    emit(settings, {"subject": subject, "principal_id": str(principal), "handle": handle})


@app.command()
def erase(
    ctx: typer.Context,
    subject: Annotated[str, typer.Argument(help="The person's Cognito sub")],
    yes: Annotated[bool, typer.Option("--yes", help="Really erase")] = False,
) -> None:
    """Operator: erase a person (personal records purged, identity pseudonymised)."""
    settings = _settings(ctx)
    if not yes:
        raise Failure("this erases the person's personal memories everywhere: add --yes")
    from memory_server.admin import operators  # the operator path only: a slow import

    with owner_connection(settings) as owner:
        report = operators.erase_person(owner, subject, directory=settings.directory())
    emit(settings, report.to_dict())


def main() -> None:
    try:
        app()
    except (Failure, AdminError, transfer.TransferError) as failure:
        message = failure.message if isinstance(failure, AdminError) else str(failure)
        err.print(f"[red]error:[/red] {message}", highlight=False)
        sys.exit(EXIT_FAILED)
    except httpx2.HTTPError as failure:
        err.print(f"[red]error:[/red] cannot reach the server: {failure}", highlight=False)
        sys.exit(EXIT_FAILED)
    except psycopg.Error as failure:
        err.print(f"[red]error:[/red] database: {failure}", highlight=False)
        sys.exit(EXIT_FAILED)


if __name__ == "__main__":
    main()
