-- Add a member (RLS: admin grant in this workspace, and directly only the workspace's
-- own agent keys; everyone else joins by accepting an invitation).
INSERT INTO memory.memberships (workspace_id, principal_id, grants, personal_namespace)
VALUES (%(workspace_id)s, %(principal_id)s, %(grants)s, %(personal_namespace)s)
