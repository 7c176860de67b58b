-- Baseline: every table, constraint, index and table privilege of the memory schema,
-- as migrations 0001 to 0020 left them (folded into one before any deployment).
--
-- Numbered migrations hold table and index changes only, applied once each. The
-- functions, policies and triggers, and the grants on functions, are current-state
-- files under infra/schema/, applied after the migrations (memory_server/migrate.py).
-- Runs as the migration role (memory_owner), which owns every object here. The runtime
-- role (memory_runtime) does all request work and is subject to row-level security.
--
-- The nil UUID as owner means "shared with the workspace"; a principal id means
-- "personal to that principal". A non-null owner keeps every lookup indexable.

CREATE TABLE workspaces (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug           text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    memory_enabled boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- A person (Cognito sub) or a service (app client id). An agent key is a service
-- principal bound to one workspace (workspace_id set), with the scopes its app client
-- was given, who created it, and when it was revoked; a revoked key's principal stays
-- (its writes keep their provenance) but never comes back.
CREATE TABLE principals (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid()
                 CHECK (id <> '00000000-0000-0000-0000-000000000000'),
    kind         text NOT NULL CHECK (kind IN ('person', 'service')),
    subject      text NOT NULL UNIQUE,  -- Cognito sub (person) or app client id (service)
    handle       text NOT NULL,         -- display name shown in provenance
    created_at   timestamptz NOT NULL DEFAULT now(),
    workspace_id uuid REFERENCES workspaces ON DELETE CASCADE,
    key_scopes   text[]
                 CHECK (key_scopes <@ ARRAY['memory/read', 'memory/write.personal',
                                            'memory/write.shared', 'memory/delete',
                                            'memory/admin']::text[]),
    created_by   uuid,
    revoked_at   timestamptz,
    CONSTRAINT agent_key_shape CHECK (
        workspace_id IS NULL OR (kind = 'service' AND key_scopes IS NOT NULL)),
    -- A write or delete scope without read cannot work (a write returns the row it
    -- wrote, which the read policy must let through) and has no use.
    CONSTRAINT agent_key_write_needs_read CHECK (
        key_scopes IS NULL
        OR 'memory/read' = ANY (key_scopes)
        OR NOT key_scopes && ARRAY['memory/write.personal', 'memory/write.shared',
                                   'memory/delete']::text[])
);
-- One live key per name in a workspace.
CREATE UNIQUE INDEX principals_agent_key_name ON principals (workspace_id, handle)
    WHERE workspace_id IS NOT NULL AND revoked_at IS NULL;

CREATE TABLE memberships (
    workspace_id       uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    principal_id       uuid NOT NULL REFERENCES principals ON DELETE CASCADE,
    grants             text[] NOT NULL
                       CHECK (grants <@ ARRAY['read', 'write:personal', 'write:shared',
                                              'delete', 'admin']::text[]),
    -- People always have a personal namespace; a service only when an admin assigns one.
    personal_namespace boolean NOT NULL,
    PRIMARY KEY (workspace_id, principal_id),
    -- Writing needs reading, as for agent keys.
    CONSTRAINT memberships_write_needs_read CHECK (
        'read' = ANY (grants)
        OR NOT grants && ARRAY['write:personal', 'write:shared', 'delete']::text[])
);
CREATE INDEX memberships_principal ON memberships (principal_id);

-- Registered contexts: private channels and DMs (open channels need no row).
CREATE TABLE contexts (
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    context_key  text COLLATE "C" NOT NULL,
    kind         text NOT NULL CHECK (kind IN ('channel', 'dm')),
    private      boolean NOT NULL,
    PRIMARY KEY (workspace_id, context_key),
    CHECK (kind = 'channel' OR private)
);

CREATE TABLE context_members (
    workspace_id uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    principal_id uuid NOT NULL REFERENCES principals ON DELETE CASCADE,
    PRIMARY KEY (workspace_id, context_key, principal_id),
    FOREIGN KEY (workspace_id, context_key) REFERENCES contexts ON DELETE CASCADE
);

-- The path and body bounds are limits.PATH_MAX_BYTES and limits.CONTENT_MAX_BYTES,
-- checked again here (tests/integration/test_schema.py holds them equal): a change
-- to either is a new migration that changes the constraint.
CREATE TABLE memories (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id  uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    owner_id      uuid NOT NULL,
    context_key   text COLLATE "C" NOT NULL,
    kind          text COLLATE "C" NOT NULL CHECK (kind IN ('memories', 'skills', 'notes')),
    path          text COLLATE "C" NOT NULL CHECK (octet_length(path) <= 256),
    title         text NOT NULL,
    body          text NOT NULL CHECK (octet_length(body) <= 65536),
    revision      integer NOT NULL CHECK (revision > 0),
    created_at    timestamptz NOT NULL DEFAULT now(),
    created_by    uuid NOT NULL,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    updated_by    uuid NOT NULL,
    source        text,
    search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', title), 'A') ||
        setweight(to_tsvector('english', body), 'D')
    ) STORED,
    CONSTRAINT memories_address UNIQUE (workspace_id, owner_id, kind, path, context_key)
);
-- memory_list walks this index in order (kind, path, context, id) within a workspace.
CREATE INDEX memories_listing ON memories (workspace_id, kind, path, context_key, id);

-- Append-only history. Owner and context never change for a record, so they are
-- copied here and the same visibility predicate applies without a join.
CREATE TABLE revisions (
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    memory_id    uuid NOT NULL,
    revision     integer NOT NULL CHECK (revision > 0),
    operation    text NOT NULL CHECK (operation IN ('create', 'replace', 'merge', 'move', 'delete')),
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL,
    path         text COLLATE "C" NOT NULL,
    title        text,             -- NULL once purged by a delete
    body         text,             -- NULL once purged by a delete
    writer_id    uuid NOT NULL,
    source       text,
    request_id   text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (memory_id, revision)
);

-- Exactly-once merges: the key and its committed result, scoped to (caller, listening
-- context, target). The same key from another context is another request: it never
-- replays a result (and so an id) from a context the caller does not hear now.
CREATE TABLE idempotency_keys (
    workspace_id    uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    principal_id    uuid NOT NULL,
    target          text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    request_hash    text NOT NULL,
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    context_key     text COLLATE "C" NOT NULL,
    PRIMARY KEY (workspace_id, principal_id, context_key, target, idempotency_key)
);

-- Transactional outbox: one row per committed change, published after commit. Admin
-- changes are audited here too, so the sweeper delivers them and one paged trail shows
-- both: an admin row carries the nil record id, revision 0, a memory-admin:// URI and
-- what changed in `details` (principal ids, client ids, grants; never content, never
-- a person's name).
CREATE TABLE audit_outbox (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    memory_id    uuid NOT NULL,
    uri          text NOT NULL,
    operation    text NOT NULL,
    revision     integer NOT NULL,
    writer_id    uuid NOT NULL,
    source       text,
    request_id   text,
    occurred_at  timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    details      jsonb
);
CREATE INDEX audit_outbox_unpublished ON audit_outbox (id) WHERE published_at IS NULL;
CREATE INDEX audit_outbox_trail ON audit_outbox (workspace_id, id DESC);

-- Search: what search sees of each record (terms: title A, path segments B, body D,
-- with positions; length: the number of positions), kept by a trigger on memories.
-- Full-text match (@@) is not LEAKPROOF, so under RLS the planner could not put the
-- GIN index ahead of the policy; this table therefore has no RLS and the runtime role
-- holds no privilege on it. It is reachable only through search_candidates(), which
-- applies the visibility predicate itself. Its GIN index is an expression over
-- functions of infra/schema/, so it is made there (infra/schema/50_search_index.sql).
CREATE TABLE search_documents (
    memory_id    uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL,
    updated_at   timestamptz NOT NULL,
    length       integer NOT NULL,
    terms        tsvector NOT NULL
) WITH (toast_tuple_target = 8160,
        autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.02);
-- Kept in the row (compressed when large): ranking reads terms for every record it
-- scores, and an out-of-line value costs an index lookup per read.
ALTER TABLE search_documents ALTER COLUMN terms SET STORAGE MAIN;

-- Per (workspace, owner, context) and lexeme, the records holding it; per (workspace,
-- owner, context) the records ('' lexeme). Statement triggers on memories keep it in
-- the same transaction as the change. Reachable only through the search functions.
CREATE TABLE search_statistics (
    workspace_id uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    lexeme       text COLLATE "C" NOT NULL,  -- '' counts the records themselves
    documents    integer NOT NULL,
    PRIMARY KEY (workspace_id, owner_id, context_key, lexeme)
) WITH (fillfactor = 70);  -- room for in-page (HOT) updates of the counts

-- -- Row-level security ----------------------------------------------------------------
-- Every tenant table is ENABLE + FORCE (FORCE applies to the owner too); the policies
-- are in infra/schema/10_visibility.sql.
ALTER TABLE workspaces ENABLE ROW LEVEL SECURITY;
ALTER TABLE workspaces FORCE ROW LEVEL SECURITY;
ALTER TABLE principals ENABLE ROW LEVEL SECURITY;
ALTER TABLE principals FORCE ROW LEVEL SECURITY;
ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;
ALTER TABLE memberships FORCE ROW LEVEL SECURITY;
ALTER TABLE contexts ENABLE ROW LEVEL SECURITY;
ALTER TABLE contexts FORCE ROW LEVEL SECURITY;
ALTER TABLE context_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE context_members FORCE ROW LEVEL SECURITY;
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
ALTER TABLE revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE revisions FORCE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
ALTER TABLE audit_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_outbox FORCE ROW LEVEL SECURITY;

-- -- Privileges on the schema and the tables --------------------------------------------
-- Least privilege: the runtime role holds nothing on search_documents,
-- search_statistics or the migrator's ledgers, and column-level UPDATE where a table
-- is append-only apart from a few columns. The auditor role only uses the schema (its
-- two functions are in infra/schema/30_audit.sql).
GRANT USAGE ON SCHEMA memory TO memory_runtime;
GRANT USAGE ON SCHEMA memory TO memory_auditor;
GRANT SELECT ON workspaces, principals TO memory_runtime;
GRANT UPDATE (memory_enabled) ON workspaces TO memory_runtime;
GRANT SELECT, INSERT, DELETE ON memberships, contexts, context_members TO memory_runtime;
GRANT UPDATE (grants, personal_namespace) ON memberships TO memory_runtime;
GRANT UPDATE (private) ON contexts TO memory_runtime;
GRANT SELECT, INSERT, DELETE ON memories TO memory_runtime;
GRANT UPDATE (title, body, revision, path, kind, updated_at, updated_by, source) ON memories TO memory_runtime;
GRANT SELECT, INSERT ON revisions TO memory_runtime;
GRANT UPDATE (title, body) ON revisions TO memory_runtime;
GRANT SELECT, INSERT, UPDATE ON idempotency_keys TO memory_runtime;
GRANT SELECT, INSERT ON audit_outbox TO memory_runtime;
GRANT UPDATE (published_at) ON audit_outbox TO memory_runtime;
