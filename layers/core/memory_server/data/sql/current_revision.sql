-- After a failed conditional change: is the record still visible, and at what revision?
SELECT m.revision
FROM memory.memories AS m
WHERE m.id = %(id)s
  AND m.workspace_id = %(workspace_id)s
  AND m.owner_id = ANY (%(owners)s)
  AND m.context_key = ANY (%(contexts)s)
