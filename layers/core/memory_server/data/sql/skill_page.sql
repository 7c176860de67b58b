-- One page of the skills the caller can see, as prompts: each skill folder's SKILL.md
-- ({folder}/SKILL.md under kind skills) in the nearest context, in (path, owner) order
-- after a cursor. Only the head of the body is read: enough for the front matter.
SELECT DISTINCT ON (m.path, m.owner_id)
       m.id, m.owner_id, m.context_key, m.path, m.title, m.revision,
       left(m.body, least(%(head_chars)s, strpos(substr(m.body, 4), E'\n---') + 7)) AS head
FROM memory.records_in_view(%(workspace_id)s, %(owners)s, %(contexts)s) AS m
WHERE m.kind = 'skills'
  AND m.path ~ '^[^/]+/SKILL\.md$'
  AND m.path >= %(after_path)s
  AND (m.path, m.owner_id) > (%(after_path)s::text, %(after_owner)s::uuid)
ORDER BY m.path, m.owner_id, array_position(%(contexts)s, m.context_key::text)
LIMIT %(limit)s
