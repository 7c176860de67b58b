-- Conditional change (replace, merge or move) of a visible record at the expected
-- revision, with its revision and audit rows, in one statement. No row back means the
-- record moved on (a conflict) or left the caller's view.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, infra/schema/30_audit.sql). The statement is a
-- function (infra/schema/40_writes.sql) so that its plan stays cached on the connection.
SELECT id, revision, context_key
FROM memory.change_record(%(id)s, %(expected_revision)s::integer, %(workspace_id)s, %(owners)s,
                          %(contexts)s, %(kind)s, %(path)s, %(title)s, %(body)s,
                          %(principal_id)s, %(source)s, %(operation)s, %(request_id)s,
                          %(uri)s, %(expires_at)s, %(keep_expiry)s, %(pinned)s)
