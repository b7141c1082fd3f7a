"""Reading one number from a GGUF file's header without loading it (llama.cpp's vocab-only load of a
262k-token vocabulary takes half a second; the header key sits in the first few kilobytes)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import BinaryIO

_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_STRING, _ARRAY = 8, 9


class GGUFHeaderError(ValueError):
    pass


def context_length(path: Path) -> int | None:
    """`{architecture}.context_length` from the header, or None when the file does not say."""
    with path.open("rb") as source:
        if source.read(4) != b"GGUF":
            raise GGUFHeaderError(f"{path} is not a GGUF file")
        version = _unpack(source, "<I")
        if version < 2:
            raise GGUFHeaderError(f"{path}: GGUF version {version} is too old")
        _unpack(source, "<Q")  # tensor count
        architecture = None
        for _ in range(_unpack(source, "<Q")):
            key = _string(source)
            kind = _unpack(source, "<I")
            if key == "general.architecture" and kind == _STRING:
                architecture = _string(source)
            elif architecture and key == f"{architecture}.context_length" and kind in _SCALARS:
                return int(_unpack(source, _SCALARS[kind]))
            else:
                _skip(source, kind)
    return None


def _unpack(source: BinaryIO, layout: str) -> int:
    size = struct.calcsize(layout)
    data = source.read(size)
    if len(data) != size:
        raise GGUFHeaderError("the GGUF header ends early")
    return struct.unpack(layout, data)[0]


def _string(source: BinaryIO) -> str:
    length = _unpack(source, "<Q")
    return source.read(length).decode("utf-8", errors="replace")


def _skip(source: BinaryIO, kind: int) -> None:
    if kind in _SCALARS:
        source.seek(struct.calcsize(_SCALARS[kind]), 1)
    elif kind == _STRING:
        source.seek(_unpack(source, "<Q"), 1)
    elif kind == _ARRAY:
        item_kind, count = _unpack(source, "<I"), _unpack(source, "<Q")
        if item_kind in _SCALARS:
            source.seek(struct.calcsize(_SCALARS[item_kind]) * count, 1)
        else:
            for _ in range(count):
                _skip(source, item_kind)
    else:
        raise GGUFHeaderError(f"unknown GGUF value type {kind}")
