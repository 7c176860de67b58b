-- Conditional delete: remove the current row, purge every revision body, keep a
-- tombstone revision (who/when/operation) and the audit row, in one statement.
-- The audit row names a personal record, or one in a private context, by id only and
-- without its source (memory.audit_discloses, migration 0012). The statement is a
-- function (migration 0020) so that its plans stay cached on the connection. No row
-- back: the record moved on, or left the caller's view.
SELECT id, revision
FROM memory.delete_record(%(id)s, %(expected_revision)s, %(workspace_id)s, %(owners)s,
                          %(contexts)s, %(principal_id)s, %(request_id)s, %(uri)s)
