-- Serialises concurrent migrators until the migration transaction ends.
SELECT pg_advisory_xact_lock(%(lock_id)s)
