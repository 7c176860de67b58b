-- Completion values: the distinct paths visible from the listening context in each
-- requested range (an owner, a kind, and [low, high) of paths), up to a limit per
-- range, each range walking the listing index in path order. With skill_folders,
-- only skill folders' SKILL.md files count (prompt names).
SELECT r.owner_id, r.kind, p.path
FROM unnest(%(range_owners)s::uuid[], %(range_kinds)s::text[],
            %(range_lows)s::text[], %(range_highs)s::text[]) AS r (owner_id, kind, low, high)
CROSS JOIN LATERAL (
    SELECT DISTINCT m.path
    FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
    WHERE m.owner_id = r.owner_id
      AND m.kind = r.kind
      AND m.path >= r.low AND m.path < r.high
      AND (NOT %(skill_folders)s OR m.path ~ '^[^/]+/SKILL\.md$')
    ORDER BY m.path
    LIMIT %(limit)s
) AS p
