-- Members that still hold the admin grant (a workspace must keep at least one).
SELECT count(*) AS admins
FROM memory.memberships AS m
WHERE m.workspace_id = %(workspace_id)s AND 'admin' = ANY (m.grants)
