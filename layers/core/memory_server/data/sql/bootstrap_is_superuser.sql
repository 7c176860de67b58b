-- Is the bootstrapping user a superuser (local, tests) or a cluster master user that
-- is not one (Aurora/RDS)?
SELECT rolsuper AS superuser FROM pg_roles WHERE rolname = current_user
