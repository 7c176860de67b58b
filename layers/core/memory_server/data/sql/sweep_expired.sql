-- The sweeper's purge of expired records (memory.expire_records, infra/schema/40_writes.sql).
SELECT memory.expire_records(%(limit)s) AS purged
