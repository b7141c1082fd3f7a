"""Reading values from a GGUF file's header without loading the model (llama.cpp's vocab-only load of
a 262k-token vocabulary takes half a second; the header keys sit at the start of the file)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
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
        architecture = None
        for key, kind in _keys(source, path):
            if key == "general.architecture" and kind == _STRING:
                architecture = _string(source)
            elif architecture and key == f"{architecture}.context_length" and kind in _SCALARS:
                return int(_unpack(source, _SCALARS[kind]))
            else:
                _skip(source, kind)
    return None


def chat_template(path: Path) -> tuple[str, str, str] | None:
    """The chat template and the texts of the BOS and EOS tokens, or None when there is no template."""
    template: str | None = None
    ids: dict[str, int] = {}
    texts: dict[int, str] = {}
    with path.open("rb") as source:
        for key, kind in _keys(source, path):
            if key == "tokenizer.chat_template" and kind == _STRING:
                template = _string(source)
            elif key in ("tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id") and kind in _SCALARS:
                ids[key.split(".")[-1]] = int(_unpack(source, _SCALARS[kind]))
            elif key == "tokenizer.ggml.tokens" and kind == _ARRAY:
                item_kind, count = _unpack(source, "<I"), _unpack(source, "<Q")
                for index in range(count):
                    if item_kind == _STRING:
                        texts[index] = _string(source)
                    else:
                        _skip(source, item_kind)
            else:
                _skip(source, kind)
    if not template:
        return None
    return template, texts.get(ids.get("bos_token_id", -1), ""), texts.get(ids.get("eos_token_id", -1), "")


def _keys(source: BinaryIO, path: Path) -> Iterator[tuple[str, int]]:
    """Each header key and its value type; the caller reads or skips the value."""
    if source.read(4) != b"GGUF":
        raise GGUFHeaderError(f"{path} is not a GGUF file")
    version = _unpack(source, "<I")
    if version < 2:
        raise GGUFHeaderError(f"{path}: GGUF version {version} is too old")
    _unpack(source, "<Q")  # tensor count
    for _ in range(_unpack(source, "<Q")):
        key = _string(source)
        yield key, _unpack(source, "<I")


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
