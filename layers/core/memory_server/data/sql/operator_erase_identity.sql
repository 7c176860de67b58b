-- Replace a person's id with the pseudonym's wherever it names a writer or an actor
-- (one UPDATE per table: a row is never updated twice in one statement). The shared
-- records and their history stay; only who wrote them changes to the pseudonym.
WITH records AS (
    UPDATE memory.memories
    SET created_by = CASE WHEN created_by = %(principal_id)s THEN %(pseudonym_id)s ELSE created_by END,
        updated_by = CASE WHEN updated_by = %(principal_id)s THEN %(pseudonym_id)s ELSE updated_by END
    WHERE created_by = %(principal_id)s OR updated_by = %(principal_id)s
    RETURNING 1
), history AS (
    UPDATE memory.revisions SET writer_id = %(pseudonym_id)s
    WHERE writer_id = %(principal_id)s
    RETURNING 1
), events AS (
    UPDATE memory.audit_outbox
    SET writer_id = CASE WHEN writer_id = %(principal_id)s THEN %(pseudonym_id)s ELSE writer_id END,
        uri = replace(uri, %(principal_text)s, %(pseudonym_text)s),
        details = replace(details::text, %(principal_text)s, %(pseudonym_text)s)::jsonb
    WHERE writer_id = %(principal_id)s
       OR uri LIKE '%%' || %(principal_text)s || '%%'
       OR details::text LIKE '%%' || %(principal_text)s || '%%'
    RETURNING 1
), keys AS (
    UPDATE memory.principals SET created_by = %(pseudonym_id)s
    WHERE created_by = %(principal_id)s
    RETURNING 1
), invited AS (
    UPDATE memory.invitations SET invited_by = %(pseudonym_id)s
    WHERE invited_by = %(principal_id)s
    RETURNING 1
)
SELECT (SELECT count(*) FROM records) AS records_pseudonymised,
       (SELECT count(*) FROM history) AS revisions_pseudonymised,
       (SELECT count(*) FROM events) AS audit_events_pseudonymised,
       (SELECT count(*) FROM keys) AS agent_keys_pseudonymised,
       (SELECT count(*) FROM invited) AS invitations_pseudonymised
