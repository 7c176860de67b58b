-- Add a member or change one (RLS: admin grant in this workspace only).
INSERT INTO memory.memberships AS m (workspace_id, principal_id, grants, personal_namespace)
VALUES (%(workspace_id)s, %(principal_id)s, %(grants)s, %(personal_namespace)s)
ON CONFLICT (workspace_id, principal_id)
DO UPDATE SET grants = EXCLUDED.grants, personal_namespace = EXCLUDED.personal_namespace
RETURNING m.grants, m.personal_namespace
