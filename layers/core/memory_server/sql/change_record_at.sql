-- Replace or delete (operation) the record a path address resolves to from the given
-- contexts (nearest first), at the expected revision, in one statement with cached
-- plans (memory.change_record_at, migration 0020; the rows are written by
-- memory.change_record or memory.delete_record). No row: nothing visible there. A row
-- not changed: the revision the record is at (a conflict), or none if it moved on
-- meanwhile.
SELECT id, revision, context_key, changed
FROM memory.change_record_at(%(workspace_id)s, %(owner_id)s, %(contexts)s, %(kind)s,
                             %(path)s, %(expected_revision)s, %(title)s, %(body)s,
                             %(principal_id)s, %(source)s, %(operation)s, %(request_id)s,
                             %(uri)s)
