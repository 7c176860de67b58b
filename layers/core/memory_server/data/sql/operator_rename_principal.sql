-- A principal's new handle, shown in every workspace it belongs to (no row: no such
-- identity). The memberships are re-keyed by trigger (infra/schema/25_handles.sql),
-- which refuses a handle another member of any of its workspaces holds.
UPDATE memory.principals SET handle = %(handle)s
WHERE subject = %(subject)s AND subject NOT LIKE 'erased:%%'
RETURNING id
