-- May the bootstrapping user act as the role (SET ROLE, ownership of what it creates)?
SELECT pg_has_role(current_user, %(role)s, 'SET') AS can_set
