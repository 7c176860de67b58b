-- A change transaction's first statement after the settings: the caller's membership,
-- checked afresh under a row lock that erasure waits for (infra/schema/20_caller.sql).
-- Raises (SQLSTATE MS403) when the membership is gone.
SELECT memory.lock_membership() AS member
