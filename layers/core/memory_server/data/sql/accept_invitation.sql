-- The invitee accepts with its own token's identity; no row: nothing to accept
-- (memory.accept_invitation, infra/schema/70_admin.sql).
SELECT outcome, principal_id, kind, handle, grants, personal_namespace
FROM memory.accept_invitation(%(workspace)s, %(invitation_id)s, %(subject)s, %(person)s,
                              %(handle)s, %(request_id)s)
