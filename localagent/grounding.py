"""The grounding check: whether what the tools found holds the run's answer.

Asked for a price, an email or a count that no file holds, a small model answers with the nearest
fact it read ("The ceramic teapot costs $27.00", the cutting board's price) rather than saying it is
not there. Asked afterwards, in a conversation of its own, whether the findings hold what the
question needs, and whether they state or give the answer, the same model most often says No to
both on those runs and Yes on the runs it got right, when it answers in the run's own format: in
text tags it writes a thought before its Yes or No. As a plain chat reply it said Yes on nearly
every run of the task suite. A question the model answers from what it
knows (the capital of Japan, after a search of the files found nothing) gets two No as well, so the
answer stands when the model gives the same one with no files at all. Only then does the run answer
that the files do not say: two No and a different answer without files.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from localagent import prompts
from localagent.messages import Message, SystemMessage, UserMessage
from localagent.worked_answer import agree

# One side question to the model, in a conversation of its own; None when the turn failed.
Ask = Callable[[list[Message]], str | None]
_FIRST_WORD = re.compile(r"^[\s*_#>\"'`]*([A-Za-z]+)")


def grounded_answer(
    question: str, found: Sequence[str], answer: str, ask: Ask
) -> tuple[str, dict[str, str | None]]:
    """`answer`, or that the files do not hold it; with the model's reply to each question asked."""
    replies: dict[str, str | None] = {}
    checks = (
        ("holds", holds_request(question, found)),
        ("supports", supports_request(question, answer, found)),
    )
    for name, request in checks:
        replies[name] = reply = ask(request)
        if reply is None or not says_no(reply):
            return answer, replies
    replies["bare"] = bare = ask(bare_request(question))
    if bare is None or agree(bare, answer, question):
        return answer, replies
    return prompts.not_found_answer(question), replies


def says_no(reply: str) -> bool:
    """Whether a reply to a Yes-or-No question is a plain No; anything else (Yes, a restated answer)
    leaves the answer as it is."""
    match = _FIRST_WORD.match(reply)
    return match is not None and match.group(1).lower() == "no"


def holds_request(question: str, found: Sequence[str]) -> list[Message]:
    return _conversation(prompts.holds_request(question, found))


def supports_request(question: str, answer: str, found: Sequence[str]) -> list[Message]:
    return _conversation(prompts.supports_request(question, answer, found))


def bare_request(question: str) -> list[Message]:
    return _conversation(prompts.bare_request(question))


def _conversation(request: str) -> list[Message]:
    return [SystemMessage(content=prompts.GROUNDING_SYSTEM), UserMessage(content=request)]
