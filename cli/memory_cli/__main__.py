"""``python -m memory_cli``: the same as the ``memoryctl`` command."""

from memory_cli.main import main

main()
