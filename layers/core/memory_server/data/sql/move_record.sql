-- Move a visible record at the expected revision to a new path, unless the
-- destination already resolves to a record the caller can see from the listening
-- context, in one statement with cached plans (memory.move_record,
-- infra/schema/40_writes.sql; the rows are written by memory.change_record). No row back: the record moved
-- on or left the caller's view. A row not moved: the destination is taken.
SELECT id, revision, context_key, moved
FROM memory.move_record(%(id)s, %(expected_revision)s::integer, %(workspace_id)s, %(owners)s,
                        %(contexts)s, %(owner_id)s, %(kind)s, %(path)s, %(title)s, %(body)s,
                        %(principal_id)s, %(request_id)s, %(uri)s)
