-- Remove a member. Its private-context memberships in the workspace go with it
-- (trigger memberships_ended, infra/schema/70_admin.sql); its personal records stay
-- (they come back if the member joins again).
DELETE FROM memory.memberships
WHERE workspace_id = %(workspace_id)s AND principal_id = %(principal_id)s
