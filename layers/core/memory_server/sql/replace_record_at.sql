-- Replace the record a path address resolves to from the given contexts (nearest
-- first), at the expected revision, in one statement with cached plans
-- (memory.replace_record_at, migration 0021; the rows are written by
-- memory.change_record, 0017). No row: nothing visible there. A row not changed: the
-- revision the record is at (a conflict), or none if it moved on meanwhile.
SELECT id, revision, context_key, changed
FROM memory.replace_record_at(%(workspace_id)s, %(owner_id)s, %(contexts)s, %(kind)s,
                              %(path)s, %(expected_revision)s, %(title)s, %(body)s,
                              %(principal_id)s, %(source)s, %(operation)s, %(request_id)s,
                              %(uri)s)
