-- Create a record, its first revision and its audit row in one statement. No row
-- back means the address was taken concurrently.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, infra/schema/30_audit.sql). The statement is a
-- function (infra/schema/40_writes.sql) so that its plan stays cached on the connection.
SELECT id, revision, context_key
FROM memory.create_record(%(workspace_id)s, %(owner_id)s, %(context_key)s, %(kind)s, %(path)s,
                          %(title)s, %(body)s, %(principal_id)s, %(source)s, %(operation)s,
                          %(request_id)s, %(uri)s, %(expires_at)s, %(pinned)s)
