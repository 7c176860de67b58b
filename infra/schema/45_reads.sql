-- Reads that a session makes in one call: the page of skills a caller can see and the
-- briefing of memory_brief.
--
-- Functions that run as the caller (SECURITY INVOKER: row-level security applies as to
-- plain statements), in PL/pgSQL, one statement for the three reads of a briefing. The
-- skills' page keeps its plan cached on the connection (request statements are not
-- prepared, memory_server.data.pool); the briefing is planned for each call (below).
-- The statements skill_page and brief (layers/core/memory_server/data/sql/) call them.
--
-- Current state, re-runnable (applied by memory_server/migrate.py after the numbered
-- migrations).

-- One page of the skills in view, as prompts: each skill folder's SKILL.md
-- ({folder}/SKILL.md under kind skills) in the nearest context, in (path, owner)
-- order after a position. Only the head of the body is read: enough for the front
-- matter.
--
-- The page is read by walking memories_listing (workspace, kind, path, ...) from the
-- position in path order, row-level security and the folder pattern checked on each
-- record walked, and stopping at the end of the page. Every view holds the
-- workspace's shared records in the workspace context, so the walk is a small
-- multiple of the page. The planner, left to itself, does otherwise under row-level
-- security: it counts the policy's predicates again on top of the statement's own
-- (owner, context and expiry twice) and guesses the pattern rare, expects one row or
-- none, and gathers every skill in view to sort them (bitmap scan, then sort): with
-- 200,000 records in the workspace, 4,933 skills in view, their bodies read,
-- 110-150 ms a page (bench/results/store-1m-brief.json) against 1 ms walked. Bitmap
-- scans and full sorts are therefore off for this function (an incremental sort of the
-- records of one path stays on).
CREATE OR REPLACE FUNCTION skill_page(p_workspace_id uuid, p_owners uuid[], p_contexts text[],
                                      p_head_chars integer, p_after_path text,
                                      p_after_owner uuid, p_limit integer)
RETURNS TABLE (id uuid, owner_id uuid, context_key text, path text, title text,
               revision integer, head text)
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
SET enable_bitmapscan = off
SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY
        SELECT DISTINCT ON (m.path, m.owner_id)
               m.id, m.owner_id, m.context_key::text, m.path::text, m.title, m.revision,
               left(m.body, least(p_head_chars, strpos(substr(m.body, 4), E'\n---') + 7))
        FROM records_in_view(p_workspace_id, p_owners, p_contexts) AS m
        WHERE m.kind = 'skills'
          AND m.path ~ '^[^/]+/SKILL\.md$'
          AND m.path >= p_after_path
          AND (m.path, m.owner_id) > (p_after_path, p_after_owner)
        ORDER BY m.path, m.owner_id, array_position(p_contexts, m.context_key::text)
        LIMIT p_limit;
END
$$;
REVOKE ALL ON FUNCTION skill_page(uuid, uuid[], text[], integer, text, uuid, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION skill_page(uuid, uuid[], text[], integer, text, uuid, integer)
    TO memory_runtime;

-- The briefing, in three sections of rows:
-- 'pinned': pinned memories and notes in view, the caller's personal ones first, then
--   by context, nearest first, then newest; the head of each body
--   and whether there is more (cut);
-- 'recent': the other memories and notes in view changed after p_since (or the
--   latest), newest first, without bodies, with the writer's handle and kind (looked
--   up once per writer: principal_provenance, a definer function, 0.1 ms a call);
-- 'skill': the first skills in view, as skill_page gives them (head in content).
-- The sections' sizes are constants (limits.BRIEF_*), not parameters: the cached plan
-- of a query whose LIMIT is a parameter is made for an unknown limit (a tenth of the
-- rows), and for a recent-changes walk over 200,000 records in view that plan sorted
-- them all (1.4 s a briefing, bench/results/store-1m-run11.json) where the index
-- memories_recent, read newest first, stops after a few rows.
DROP FUNCTION IF EXISTS brief(uuid, uuid[], text[], integer, integer, timestamptz, integer,
                              integer, integer);
-- Its result gained updated_by_kind (the writer's kind beside its handle): a result
-- type is not replaced in place.
DROP FUNCTION IF EXISTS brief(uuid, uuid[], text[], timestamptz);
CREATE OR REPLACE FUNCTION brief(p_workspace_id uuid, p_owners uuid[], p_contexts text[],
                                 p_since timestamptz)
RETURNS TABLE (section text, id uuid, owner_id uuid, context_key text, kind text, path text,
               title text, revision integer, updated_at timestamptz, content text, cut boolean,
               updated_by text, updated_by_kind text)
LANGUAGE plpgsql STABLE SET search_path = memory, pg_temp
-- Planned for each call's own values: the generic plan PL/pgSQL would settle on after
-- five calls knows neither the workspace's size nor the owners and contexts, and at
-- 200,000 records in view it read the recent changes through the address index and
-- sorted them (100-230 ms a call against 6 ms planned each time).
SET plan_cache_mode = force_custom_plan
AS $$
BEGIN
    RETURN QUERY
        SELECT 'pinned', m.id, m.owner_id, m.context_key::text, m.kind::text, m.path::text,
               m.title, m.revision, m.updated_at, left(m.body, {{BRIEF_CONTENT_BYTES}}),
               char_length(m.body) > {{BRIEF_CONTENT_BYTES}}, NULL::text, NULL::text
        FROM records_in_view(p_workspace_id, p_owners, p_contexts) AS m
        WHERE m.pinned
          AND m.kind IN ('memories', 'notes')
        ORDER BY m.owner_id = '00000000-0000-0000-0000-000000000000',
                 array_position(p_contexts, m.context_key::text), m.updated_at DESC, m.id
        LIMIT {{BRIEF_PINNED_ITEMS}};
    RETURN QUERY
        WITH recent AS (
            SELECT m.id, m.owner_id, m.context_key, m.kind, m.path, m.title, m.revision,
                   m.updated_at, m.updated_by
            FROM records_in_view(p_workspace_id, p_owners, p_contexts) AS m
            WHERE NOT m.pinned
              AND m.kind IN ('memories', 'notes')
              -- One sargable bound, not "p_since IS NULL OR ...": the cached plan
              -- cannot know which side holds, and planned the OR as a sort of
              -- every record in view.
              AND m.updated_at > coalesce(p_since, '-infinity')
            ORDER BY m.updated_at DESC, m.id
            LIMIT {{BRIEF_RECENT_ITEMS}}
        ), writers AS (
            SELECT w.updated_by, p.handle, p.kind
            FROM (SELECT DISTINCT r.updated_by FROM recent AS r) AS w
            CROSS JOIN LATERAL principal_provenance(w.updated_by) AS p
        )
        SELECT 'recent', r.id, r.owner_id, r.context_key::text, r.kind::text, r.path::text,
               r.title, r.revision, r.updated_at, NULL::text, NULL::boolean, w.handle, w.kind
        FROM recent AS r
        JOIN writers AS w ON w.updated_by = r.updated_by
        ORDER BY r.updated_at DESC, r.id;
    RETURN QUERY
        SELECT 'skill', s.id, s.owner_id, s.context_key, 'skills', s.path, s.title, s.revision,
               NULL::timestamptz, s.head, NULL::boolean, NULL::text, NULL::text
        FROM skill_page(p_workspace_id, p_owners, p_contexts, {{SKILL_HEAD_CHARS}}, '',
                        '00000000-0000-0000-0000-000000000000', {{BRIEF_SKILL_ITEMS}}) AS s;
END
$$;
REVOKE ALL ON FUNCTION brief(uuid, uuid[], text[], timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION brief(uuid, uuid[], text[], timestamptz) TO memory_runtime;
