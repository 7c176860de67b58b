-- The pseudonym that takes an erased person's place in history and audit rows.
INSERT INTO memory.principals (kind, subject, handle)
VALUES ('person', %(subject)s, %(handle)s)
RETURNING id
