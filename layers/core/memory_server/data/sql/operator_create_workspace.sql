-- A new workspace; no row back when the slug is taken (never an upsert here).
INSERT INTO memory.workspaces (slug, memory_enabled)
VALUES (%(slug)s, %(memory_enabled)s)
ON CONFLICT (slug) DO NOTHING
RETURNING id, created_at
