-- Delete the record a path address resolves to from the listening context (nearest
-- first), at the expected revision, in one statement with cached plans
-- (memory.delete_record_at, migration 0022; the rows are written by
-- memory.delete_record). No row: nothing visible there. A row not changed: the
-- revision the record is at (a conflict), or none if it moved on meanwhile.
SELECT id, revision, changed
FROM memory.delete_record_at(%(workspace_id)s, %(owner_id)s, %(contexts)s, %(kind)s,
                             %(path)s, %(expected_revision)s, %(principal_id)s,
                             %(request_id)s, %(uri)s)
