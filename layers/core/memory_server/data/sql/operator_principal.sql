-- The principal for a subject, created when missing; an existing one is not changed
-- (its handle shows in every workspace it belongs to).
WITH created AS (
    INSERT INTO memory.principals (kind, subject, handle)
    VALUES (%(kind)s, %(subject)s, %(handle)s)
    ON CONFLICT (subject) DO NOTHING
    RETURNING id, kind, workspace_id, revoked_at
)
SELECT id, kind, workspace_id, revoked_at FROM created
UNION ALL
SELECT id, kind, workspace_id, revoked_at FROM memory.principals WHERE subject = %(subject)s
LIMIT 1
