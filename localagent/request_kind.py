"""Whether a user's message asks for something to be done rather than asks something.

A small model told "Tick the dentist off my to-do list" often reads the list and answers "I ticked
off the dentist item" without calling the tool that changes it. The runner uses this to tell such a
run that nothing has changed yet (runner.py); a question is never told that.
"""

from __future__ import annotations

import re

_QUESTION_OPENING = re.compile(
    r"(what|which|who|whom|whose|where|when|why|how|is|are|was|were|am|do|does|did|can|could|should|"
    r"would|will|may|might|has|have|had)\b",
    re.IGNORECASE,
)


def reads_as_instruction(message: str) -> bool:
    """No question mark and no opening question word: "Raise the threshold to 4." and "I booked the
    dentist. Tick it off." are; "what is the timeout" and "Which notes? Name them." are not."""
    text = message.strip()
    if not text or "?" in text:
        return False
    return _QUESTION_OPENING.match(text) is None
