-- The principal for a subject, created when kind and handle are given (migration 0007).
SELECT id, kind FROM memory.admin_principal(%(kind)s, %(subject)s, %(handle)s)
