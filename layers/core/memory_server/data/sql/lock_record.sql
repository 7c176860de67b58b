-- Lock a visible record for a read-modify-write (remember) and read its latest state.
SELECT m.body, m.revision
FROM memory.memories AS m
WHERE m.id = %(id)s
  AND m.workspace_id = %(workspace_id)s
  AND m.owner_id = ANY (%(owners)s)
  AND m.context_key = ANY (%(contexts)s)
FOR UPDATE
