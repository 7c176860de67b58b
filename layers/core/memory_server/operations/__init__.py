"""One function per tool, each one transaction: ``(store, caller, args) -> result``;
and the reads behind prompts and completions (:mod:`.skills`, :mod:`.path_completion`)."""

from memory_server.operations.memory_brief import memory_brief
from memory_server.operations.memory_delete import memory_delete
from memory_server.operations.memory_list import memory_list
from memory_server.operations.memory_move import memory_move
from memory_server.operations.memory_read import memory_read, read_revision
from memory_server.operations.memory_remember import memory_remember
from memory_server.operations.memory_scopes import memory_scopes
from memory_server.operations.memory_search import memory_search
from memory_server.operations.memory_write import memory_write

__all__ = [
    "memory_brief",
    "memory_delete",
    "memory_list",
    "memory_move",
    "memory_read",
    "memory_remember",
    "memory_scopes",
    "memory_search",
    "memory_write",
    "read_revision",
]
