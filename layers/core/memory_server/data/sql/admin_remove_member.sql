-- Remove a member and its private-context memberships in this workspace. Its
-- personal records stay (they come back if the member is added again).
WITH gone AS (
    DELETE FROM memory.memberships
    WHERE workspace_id = %(workspace_id)s AND principal_id = %(principal_id)s
    RETURNING principal_id
), contexts AS (
    DELETE FROM memory.context_members
    WHERE workspace_id = %(workspace_id)s AND principal_id IN (SELECT principal_id FROM gone)
)
SELECT count(*) AS removed FROM gone
