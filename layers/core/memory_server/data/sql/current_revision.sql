-- After a failed conditional change: is the record still visible, and at what revision?
SELECT m.revision
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE m.id = %(id)s
