-- One page of the skills the caller can see, as prompts, after a position
-- (memory.skill_page, infra/schema/45_reads.sql: its plan cached on the connection).
SELECT id, owner_id, context_key, path, title, revision, head
FROM memory.skill_page(%(workspace_id)s, %(owners)s, %(contexts)s, %(head_chars)s,
                       %(after_path)s, %(after_owner)s, %(limit)s)
