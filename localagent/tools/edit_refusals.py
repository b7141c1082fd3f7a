"""What an edit tool says when it refuses a call, naming the one call that does what was asked
when the file shows what that is: write_file of a file that exists, when the model's lines are all
new to it, and replace_in_file whose old appears in several places."""

from __future__ import annotations

import json

_CALL_SHOWN_CHARS = 600  # longer content is not echoed back into the prompt
_LINES_NAMED = 5
_LINE_CHARS = 120


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


def ambiguous_old_refusal(
    shown: str, old: str, new: str, places: list[tuple[int, str]], count: int, replaceable: bool
) -> str:
    """The refusal of replace_in_file when `old` appears `count` times in `shown`, on the numbered
    lines of `places`; the call with replace_all is named when it is `replaceable` (no two places
    overlap)."""
    named = "; ".join(
        f"line {number}: {line.strip()[:_LINE_CHARS]!r}" for number, line in places[:_LINES_NAMED]
    )
    more = f"; and {len(places) - _LINES_NAMED} more lines" if len(places) > _LINES_NAMED else ""
    refusal = (
        f"old appears {count} times in {shown}, but it must appear exactly once. Nothing was changed. "
        f"It is on {named}{more}. "
    )
    if replaceable and len(old) + len(new) <= _CALL_SHOWN_CHARS:
        call = json.dumps({"path": shown, "old": old, "new": new, "replace_all": True}, ensure_ascii=False)
        return (
            f"{refusal}To replace every place, call replace_in_file with {call}; to change one place, "
            "copy more of its line into old."
        )
    return f"{refusal}Copy more of the line you mean into old, so that it matches one place."


def _all_lines_new(text: str, content: str) -> bool:
    wanted = [line.strip() for line in content.splitlines() if line.strip()]
    present = {line.strip() for line in text.splitlines()}
    return bool(wanted) and not any(line in present for line in wanted)
