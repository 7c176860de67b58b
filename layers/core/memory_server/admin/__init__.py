"""Administration: the admin API (``http``), its actions and models, operator
commands above workspaces (``operators``), and the user-pool seam (``identity``).
Export/import and ``memoryctl`` live in the CLI package (``memory_cli``). See
docs/admin.md."""
