"""Administration: the admin API (``http``), its actions and models, operator
commands above workspaces (``operators``), export/import (``transfer``), and the
user-pool seam (``identity``). See docs/admin.md."""
