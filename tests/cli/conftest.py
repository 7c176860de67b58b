"""The CLI's tests share the admin tests' fixtures: the admin API in process over the
test database, and the shared local stack (``memoryctl`` runs against it)."""

from tests.admin.conftest import admin_service, directory, stack

__all__ = ["admin_service", "directory", "stack"]
