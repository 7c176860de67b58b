-- Lock a visible record for a read-modify-write (remember) and read its latest state.
-- The view's predicate is written out on the table itself, not through
-- memory.records_in_view: with FOR UPDATE through that sub-select, remembers racing on
-- one record found it gone after waiting for its lock and ran out of retries
-- (tests/integration/test_concurrent_writes.py).
SELECT m.body, m.revision
FROM memory.memories AS m
WHERE m.id = %(id)s
  AND m.workspace_id = %(workspace_id)s
  AND m.owner_id = ANY (%(owners)s)
  AND m.context_key = ANY (%(contexts)s)
  AND memory.is_live(m.expires_at)
FOR UPDATE
