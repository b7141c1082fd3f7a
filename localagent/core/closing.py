"""`with thing:` for the classes that hold something to release: the block's end calls `close()`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class ClosesOnExit:
    def close(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} has nothing to close")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()
