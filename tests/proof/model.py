"""An independent model of who may see and change what (docs/contract.md §2, §4, §8).

Written from the contract's words, not from the product code, so the proof suite
compares the server against a second opinion: the demo tenants, grants as token
scopes ∩ membership grants, the listening-context lattice and the registered
(private) contexts. Nothing here imports ``memory_server``.
"""

from __future__ import annotations

from dataclasses import dataclass

GRANTS = ("read", "write:personal", "write:shared", "delete", "admin")
ALL = frozenset(GRANTS)

WORKSPACES = ("acme", "globex", "initech")
ENABLED = {"acme": True, "globex": True, "initech": False}

# The contexts the matrix uses. A thread follows its channel; a DM exists only when
# registered; a channel is open unless registered as private.
CONTEXTS = (
    "workspace",
    "channel:general",
    "channel:general/thread:t1",
    "channel:eng",
    "channel:leads",
    "dm:alice-release-bot",
)
REGISTERED = {
    "acme": {"channel:leads": {"alice"}, "dm:alice-release-bot": {"alice", "release-bot"}},
}


@dataclass(frozen=True)
class Principal:
    token: str  # the name of its demo token
    identity: str  # who it is: alice-readonly is alice with fewer scopes
    person: bool
    scopes: frozenset[str]  # as grants, for the intersection


PRINCIPALS = {
    p.token: p
    for p in (
        Principal("alice", "alice", True, ALL),
        Principal("alice-readonly", "alice", True, frozenset({"read"})),
        Principal("bob", "bob", True, ALL),
        Principal("carol", "carol", True, ALL),
        Principal("ci-bot", "ci-bot", False, frozenset({"read"})),
        Principal("release-bot", "release-bot", False, frozenset({"read", "write:shared"})),
    )
}
TOKENS = tuple(PRINCIPALS)

# Membership grants by identity (initech is off, so whoever is in it gets 404).
MEMBERSHIPS: dict[tuple[str, str], frozenset[str]] = {
    ("alice", "acme"): ALL,
    ("alice", "globex"): frozenset({"read"}),
    ("bob", "acme"): frozenset({"read", "write:personal"}),
    ("carol", "globex"): ALL,
    ("ci-bot", "acme"): frozenset({"read"}),
    ("release-bot", "acme"): frozenset({"read", "write:shared"}),
}


@dataclass(frozen=True)
class Cell:
    """Where a request stands: a token, a workspace and a listening context."""

    token: str
    workspace: str
    context: str

    @property
    def principal(self) -> Principal:
        return PRINCIPALS[self.token]

    def __str__(self) -> str:
        return f"{self.token}@{self.workspace}/{self.context}"


def ancestors(context: str) -> tuple[str, ...]:
    """The context itself and everything above it, nearest first."""
    if context == "workspace":
        return ("workspace",)
    channel, slash, _thread = context.partition("/")
    if slash:
        return (context, channel, "workspace")
    return (context, "workspace")


def gate(context: str) -> str | None:
    """The registered context that decides whether one may listen from ``context``."""
    if context == "workspace":
        return None
    if context.startswith("dm:"):
        return context
    return context.partition("/")[0]


def endpoint_status(cell: Cell) -> int:
    """200 when the request is served, 403 context_unavailable, 404 for the workspace."""
    identity = cell.principal.identity
    if not ENABLED[cell.workspace] or (identity, cell.workspace) not in MEMBERSHIPS:
        return 404
    key = gate(cell.context)
    if key is None:
        return 200
    registered = REGISTERED.get(cell.workspace, {})
    if key in registered:
        return 200 if identity in registered[key] else 403
    return 403 if key.startswith("dm:") else 200


def grants(cell: Cell) -> frozenset[str]:
    membership = MEMBERSHIPS.get((cell.principal.identity, cell.workspace), frozenset())
    return cell.principal.scopes & membership


def namespaces_writable(cell: Cell) -> tuple[str, ...]:
    """Namespaces in which the cell may create records."""
    if endpoint_status(cell) != 200:
        return ()
    effective = grants(cell)
    out = []
    if "write:personal" in effective and cell.principal.person:
        out.append("me")
    if "write:shared" in effective:
        out.append("workspace")
    return tuple(out)


def may_change(cell: Cell, namespace: str) -> bool:
    """Replace, merge or move a visible record of ``namespace``."""
    return namespace in namespaces_writable(cell)


def may_delete(cell: Cell, namespace: str) -> bool:
    return may_change(cell, namespace) and "delete" in grants(cell)


@dataclass(frozen=True)
class Placed:
    """A record's coordinates as the model sees them."""

    workspace: str
    context: str
    namespace: str  # "me" or "workspace"
    owner: str | None  # identity owning a personal record


def visible(record: Placed, observer: Cell) -> bool:
    """docs/contract.md §4: same workspace, read grant, context in the observer's ancestor set,
    and a shared record or one's own personal record."""
    if endpoint_status(observer) != 200 or "read" not in grants(observer):
        return False
    if record.workspace != observer.workspace:
        return False
    if record.context not in ancestors(observer.context):
        return False
    return record.namespace == "workspace" or record.owner == observer.principal.identity


def all_cells() -> list[Cell]:
    return [Cell(t, w, c) for t in TOKENS for w in WORKSPACES for c in CONTEXTS]


def cursor_binding(cell: Cell) -> tuple[str, str, str, frozenset[str]]:
    """docs/contract.md §6: a cursor is bound to the caller, workspace, context and grants."""
    return (cell.principal.identity, cell.workspace, cell.context, grants(cell))
