-- Replace or delete (operation) a record at the expected revision, in one statement
-- with cached plans (memory.change_record_at): the record id names (a write by id,
-- after reading it), else the one the path address resolves to from the given
-- contexts (nearest first). No row: nothing visible there. A row not changed: the
-- revision the record is at (a conflict), or none if it moved on meanwhile.
SELECT id, revision, context_key, changed
FROM memory.change_record_at(%(id)s, %(workspace_id)s, %(owner_id)s, %(contexts)s, %(kind)s,
                             %(path)s, %(expected_revision)s::integer, %(title)s, %(body)s,
                             %(principal_id)s, %(source)s, %(operation)s, %(request_id)s,
                             %(uri)s, %(expires_at)s, %(keep_expiry)s, %(pinned)s)
