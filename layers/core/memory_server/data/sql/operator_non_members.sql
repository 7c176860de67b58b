-- Which of the given principal ids are not members of the workspace.
SELECT given.id
FROM unnest(%(members)s::uuid[]) AS given (id)
WHERE NOT EXISTS (
    SELECT 1 FROM memory.memberships AS m
    WHERE m.workspace_id = %(workspace_id)s AND m.principal_id = given.id
)
