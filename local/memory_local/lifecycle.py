"""What the local stand-ins that run in the background share: ``with`` one starts it
and stops it on leaving the block."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class StartsAndStops:
    """A stand-in with ``start`` (returning itself) and ``stop``; a context manager."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
