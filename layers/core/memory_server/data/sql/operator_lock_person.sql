-- Erasure waits for the person's changes in flight and keeps new ones out until it
-- commits: every membership row of the person, locked for update (each change holds
-- its own row FOR KEY SHARE: memory.lock_membership, infra/schema/20_caller.sql).
SELECT 1 FROM memory.memberships WHERE principal_id = %(principal_id)s FOR UPDATE
