-- Does a context or any of its threads hold a record, in any namespace (owner role)?
SELECT EXISTS (
    SELECT 1 FROM memory.memories AS m
    WHERE m.workspace_id = %(workspace_id)s AND split_part(m.context_key, '/', 1) = %(context_key)s
) AS found
