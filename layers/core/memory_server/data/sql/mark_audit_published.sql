UPDATE memory.audit_outbox SET published_at = now()
WHERE workspace_id = %(workspace_id)s AND id = ANY (%(ids)s) AND published_at IS NULL
