-- Change a member's grants and personal namespace (RLS: admin grant in this workspace).
UPDATE memory.memberships
SET grants = %(grants)s, personal_namespace = %(personal_namespace)s
WHERE workspace_id = %(workspace_id)s AND principal_id = %(principal_id)s
