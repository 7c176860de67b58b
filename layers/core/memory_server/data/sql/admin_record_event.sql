-- One audit row for an admin change, in the change's own transaction; published
-- after commit like every outbox row (nil record id, revision 0).
INSERT INTO memory.audit_outbox
    (workspace_id, memory_id, uri, operation, revision, writer_id, source, request_id, details)
VALUES (%(workspace_id)s, '00000000-0000-0000-0000-000000000000', %(uri)s, %(operation)s, 0,
        %(principal_id)s, %(source)s, %(request_id)s, %(details)s)
RETURNING id
