-- What a change of a context needs to know that the admin may not read itself: is it
-- registered, private, is the admin in it, is anyone, does it hold records
-- (memory.admin_context_state, infra/schema/70_admin.sql; no names, no counts).
SELECT registered, private, caller_in_it, has_members, holds_records
FROM memory.admin_context_state(%(context_key)s)
