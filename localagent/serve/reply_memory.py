"""The replies this server wrote, kept as the model wrote them, found again by their call ids or answer.

OpenAI clients send a reply back in the next request without its reasoning (most drop
`reasoning_content`). Rendered without it, the next prompt would differ from what the model wrote
at the reply's first token, and the KV cache would be reused only up to there. Restoring the reply
keeps the prompt byte for byte what the model saw and wrote, and lets it read its own thoughts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from localagent.core.messages import AssistantMessage, ToolRequest


class ReplyMemory:
    def __init__(self, size: int = 512) -> None:
        self._size = size
        self._replies: OrderedDict[str, AssistantMessage] = OrderedDict()
        self._lock = threading.Lock()  # the worker remembers while requests are read on the event loop

    def remember(self, reply: AssistantMessage) -> None:
        key = _key(reply)
        with self._lock:
            self._replies[key] = reply
            self._replies.move_to_end(key)
            while len(self._replies) > self._size:
                self._replies.popitem(last=False)

    def recall(self, sent: AssistantMessage) -> AssistantMessage:
        """The reply as the model wrote it, when `sent` is one of ours; else `sent` as it is."""
        with self._lock:
            kept = self._replies.get(_key(sent))
        if kept is None or not _same_reply(kept, sent):
            return sent
        return kept


def _key(reply: AssistantMessage) -> str:
    if reply.tool_requests:
        return "calls:" + "\n".join(request.id for request in reply.tool_requests)
    return "answer:" + reply.content


def _same_reply(kept: AssistantMessage, sent: AssistantMessage) -> bool:
    """The client changed nothing that the model wrote (its reasoning it may leave out)."""
    if sent.reasoning is not None and sent.reasoning.strip() != (kept.reasoning or "").strip():
        return False
    if sent.content.strip() != kept.content.strip():
        return False
    return [_call(r) for r in sent.tool_requests] == [_call(r) for r in kept.tool_requests]


def _call(request: ToolRequest) -> tuple[str, object]:
    """A call by its name and arguments, which a client that writes calls as text may respace."""
    return request.name, request.arguments if request.arguments is not None else request.raw_arguments
