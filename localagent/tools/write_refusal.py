"""What write_file says of a file that exists: when the model's lines are all new to it, the one
call that adds them at its end; else how to change a part of it."""

from __future__ import annotations

import json

_CALL_SHOWN_CHARS = 600  # longer content is not echoed back into the prompt


def existing_file_refusal(shown: str, text: str | None, content: str) -> str:
    """The refusal of write_file for the existing file `shown`, whose text is `text` (None when it
    cannot be read as text), given `content`."""
    refusal = f"{shown} already exists, and write_file only creates new files. Nothing was changed. "
    if text is not None and _all_lines_new(text, content) and len(content) <= _CALL_SHOWN_CHARS:
        call = json.dumps({"path": shown, "old": "", "new": content}, ensure_ascii=False)
        return (
            f"{refusal}None of your lines is in it yet; to add them at its end, call replace_in_file "
            f"with {call}"
        )
    return (
        f"{refusal}Change it with replace_in_file: old is the exact text to replace, copied from the "
        "file, or '' to add new at the end of the file."
    )


def _all_lines_new(text: str, content: str) -> bool:
    wanted = [line.strip() for line in content.splitlines() if line.strip()]
    present = {line.strip() for line in text.splitlines()}
    return bool(wanted) and not any(line in present for line in wanted)
