-- Invite a subject, replacing its pending invitation; no row: the workspace holds too
-- many pending invitations (memory.admin_invite, infra/schema/70_admin.sql).
SELECT id, subject, grants, personal_namespace, invited_by, invited_by_kind, created_at,
       expires_at
FROM memory.admin_invite(%(subject)s, %(grants)s, %(personal_namespace)s,
                         make_interval(secs => %(ttl_s)s), %(max_pending)s)
