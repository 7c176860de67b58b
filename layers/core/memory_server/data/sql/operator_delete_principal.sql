-- The person's own row goes last; memberships and context memberships cascade, so
-- no workspace resolves their tokens any more.
WITH gone AS (
    DELETE FROM memory.principals WHERE id = %(principal_id)s RETURNING id
)
SELECT count(*) AS principals FROM gone
