-- Audit: what an outbox row may name, and the sweeper's two functions.
--
-- Every committed change writes one audit_outbox row in its own transaction
-- (40_writes.sql for records, the admin API for admin changes). The endpoint publishes
-- its own request's rows after commit, as the runtime role inside its workspace. The
-- scheduled sweeper works across workspaces, so it has a role of its own
-- (memory_auditor) that can do exactly two things: claim unpublished rows (locked, so
-- a row is never published twice concurrently) and mark them published. Neither
-- returns any memory content. The sweeper's batch size and minimum age are
-- parameters, given by its caller (memory_server/audit.py).
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- May a record's address and source appear in the audit trail an admin pages and in
-- the events on the audit bus? Only for a shared record outside any registered
-- private context (a thread follows its channel). Otherwise the outbox row names the
-- record by id (memory://record/{id}) and carries no source. PL/pgSQL so that its
-- plan stays cached on the connection: every change calls it.
CREATE OR REPLACE FUNCTION audit_discloses(ws uuid, owner uuid, ctx text) RETURNS boolean
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
BEGIN
    RETURN owner = '00000000-0000-0000-0000-000000000000'
       AND NOT EXISTS (SELECT 1 FROM contexts AS c
                       WHERE c.workspace_id = ws
                         AND c.context_key = split_part(ctx, '/', 1)
                         AND c.private);
END
$$;
REVOKE ALL ON FUNCTION audit_discloses(uuid, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_discloses(uuid, uuid, text) TO memory_runtime;

-- The address an outbox row names a record by: p_uri where audit_discloses allowed it,
-- else the record's id.
CREATE OR REPLACE FUNCTION audit_uri(discloses boolean, p_id uuid, p_uri text) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN CASE WHEN discloses THEN p_uri ELSE 'memory://record/' || p_id::text END;
REVOKE ALL ON FUNCTION audit_uri(boolean, uuid, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_uri(boolean, uuid, text) TO memory_runtime;

CREATE OR REPLACE FUNCTION audit_claim_unpublished(p_limit integer, p_min_age interval)
RETURNS TABLE (id bigint, workspace text, memory_id uuid, uri text, operation text,
               revision integer, writer_id uuid, source text, request_id text,
               occurred_at timestamptz)
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    SELECT a.id, w.slug, a.memory_id, a.uri, a.operation, a.revision, a.writer_id, a.source,
           a.request_id, a.occurred_at
    FROM audit_outbox AS a
    JOIN workspaces AS w ON w.id = a.workspace_id
    WHERE a.published_at IS NULL
      AND a.occurred_at <= now() - p_min_age
    ORDER BY a.id
    LIMIT p_limit
    FOR UPDATE OF a SKIP LOCKED
$$;
REVOKE ALL ON FUNCTION audit_claim_unpublished(integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_claim_unpublished(integer, interval) TO memory_auditor;

CREATE OR REPLACE FUNCTION audit_mark_published(p_ids bigint[]) RETURNS integer
LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = memory, pg_temp
AS $$
    WITH marked AS (
        UPDATE audit_outbox SET published_at = now()
        WHERE id = ANY (p_ids) AND published_at IS NULL
        RETURNING 1
    )
    SELECT count(*)::integer FROM marked
$$;
REVOKE ALL ON FUNCTION audit_mark_published(bigint[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit_mark_published(bigint[]) TO memory_auditor;
