-- A person's pending invitations, in every workspace, go with the rest of them.
WITH gone AS (
    DELETE FROM memory.invitations WHERE subject = %(subject)s RETURNING 1
)
SELECT count(*) AS invitations FROM gone
