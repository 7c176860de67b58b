SELECT pg_has_role(%(role)s, %(of_role)s, 'MEMBER') AS member
