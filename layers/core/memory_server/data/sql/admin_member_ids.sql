-- Principal ids of the given subjects that are members of the workspace.
SELECT p.subject, p.id
FROM memory.memberships AS m
JOIN memory.principals AS p ON p.id = m.principal_id
WHERE m.workspace_id = %(workspace_id)s AND p.subject = ANY (%(subjects)s)
