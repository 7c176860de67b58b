-- Does a workspace hold any record? (the demo seed writes its samples only into an empty one)
SELECT EXISTS (SELECT 1 FROM memory.memories WHERE workspace_id = %(workspace_id)s) AS found
