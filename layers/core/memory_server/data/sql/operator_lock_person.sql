-- Erasure waits for the person's changes in flight and keeps new ones out until it
-- commits (the lock every change takes shared: memory.lock_membership, infra/schema/20_caller.sql).
SELECT pg_advisory_xact_lock(memory.principal_lock_key(%(principal_id)s))
