SELECT true AS role_exists FROM pg_roles WHERE rolname = %(role)s
