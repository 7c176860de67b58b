-- Core schema: tenants, principals, grants, contexts, records, history, keys, audit.
-- Runs as the migration role (memory_owner), which owns every object here.
-- The runtime role (memory_runtime) does all request work and is subject to RLS.

-- The nil UUID as owner means "shared with the workspace"; a principal id means
-- "personal to that principal". A non-null owner keeps every lookup indexable.

CREATE TABLE workspaces (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug           text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    memory_enabled boolean NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE principals (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid()
               CHECK (id <> '00000000-0000-0000-0000-000000000000'),
    kind       text NOT NULL CHECK (kind IN ('person', 'service')),
    subject    text NOT NULL UNIQUE,  -- Cognito sub (person) or app client id (service)
    handle     text NOT NULL,         -- display name shown in provenance
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    workspace_id       uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    principal_id       uuid NOT NULL REFERENCES principals ON DELETE CASCADE,
    grants             text[] NOT NULL
                       CHECK (grants <@ ARRAY['read', 'write:personal', 'write:shared',
                                              'delete', 'admin']::text[]),
    -- People always have a personal namespace; a service only when an admin assigns one.
    personal_namespace boolean NOT NULL,
    PRIMARY KEY (workspace_id, principal_id)
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

-- Exactly-once merges: the key and its committed result, scoped to (caller, target).
CREATE TABLE idempotency_keys (
    workspace_id    uuid NOT NULL REFERENCES workspaces ON DELETE CASCADE,
    principal_id    uuid NOT NULL,
    target          text COLLATE "C" NOT NULL,
    idempotency_key text COLLATE "C" NOT NULL,
    request_hash    text NOT NULL,
    result          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, principal_id, target, idempotency_key)
);

-- Transactional outbox: one row per committed change, published after commit.
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
    published_at timestamptz
);
CREATE INDEX audit_outbox_unpublished ON audit_outbox (id) WHERE published_at IS NULL;

-- Search index: a narrow copy of each record's search vector plus "access lexemes"
-- (workspace, context, owner), so one GIN probe finds only candidates the caller may
-- see. Full-text match (@@) is not LEAKPROOF, so under RLS the planner could not put
-- the GIN index ahead of the policy; this table therefore has no RLS and the runtime
-- role holds no privilege on it. It is reachable only through search_candidates(),
-- which applies the visibility predicate itself.
CREATE TABLE search_documents (
    memory_id    uuid PRIMARY KEY,
    workspace_id uuid NOT NULL,
    owner_id     uuid NOT NULL,
    context_key  text COLLATE "C" NOT NULL,
    kind         text COLLATE "C" NOT NULL,
    updated_at   timestamptz NOT NULL,
    document     tsvector NOT NULL
);
CREATE INDEX search_documents_document ON search_documents USING gin (document);
