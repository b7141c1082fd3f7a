"""Replies local models really wrote without a grammar, read by the tolerant parser (tests/data/README.md)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from localagent.core.messages import Final, ToolRequests, parse_tool_choice
from localagent.errors import RecoverableTurnError
from localagent.formats.react.parser import parse_reply
from localagent.loop.tool_execution import choice_refusal, request_problem
from localagent.tools.base import Tool
from localagent.tools.spec import load_tool_specs
from localagent.turn import prompts

DATA = Path(__file__).parent / "data"
CORPUS = [json.loads(line) for line in (DATA / "unconstrained_replies.jsonl").read_text("utf-8").splitlines()]
TOKEN_LIMIT = 160  # the recording's max_tokens


@pytest.fixture(scope="module")
def tools() -> dict[str, Tool]:
    """The tools as the models saw them when the replies were recorded; the built-in ones change."""
    specs = load_tool_specs((DATA / "unconstrained_replies_tools.json").read_text("utf-8"))
    return {spec.name: Tool.from_spec(spec, never_run) for spec in specs}


def never_run(**arguments: Any) -> str:
    raise AssertionError("the corpus test runs no tool")


def test_the_corpus_has_forty_distinct_replies_from_every_local_model() -> None:
    assert len({reply["text"] for reply in CORPUS}) >= 40
    per_model = Counter(reply["model"].split("-")[0] for reply in CORPUS)
    assert set(per_model) == {"gemma3", "smollm2", "qwen2.5"}
    assert {reply["model"] for reply in CORPUS if "qwen" in reply["model"]} == {
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
    }
    # Every outcome occurs: requests, answers and replies the model must write again.
    assert {next(iter(reply["expect"])) for reply in CORPUS} == {"calls", "final", "error"}


@pytest.mark.parametrize(
    "reply", CORPUS, ids=[f"{r['model'][:12]}:{r['prompt']}:{i}" for i, r in enumerate(CORPUS)]
)
def test_a_recorded_reply_is_read_as_reviewed(reply: dict[str, Any], tools: dict[str, Tool]) -> None:
    choice = parse_tool_choice(reply["tool_choice"])
    specs = [tool.spec for tool in tools.values()]
    expect = reply["expect"]
    if "error" in expect:
        with pytest.raises(RecoverableTurnError) as caught:
            parse_reply(
                reply["text"], specs, choice, tolerant=True, cut_off=reply["cut_off"], token_limit=TOKEN_LIMIT
            )
        assert caught.value.problem == expect["error"]
        assert expect["feedback_says"] in caught.value.feedback
        if expect["error"] != "cut_off":  # and it shows exactly what to write
            assert caught.value.feedback.endswith(prompts.react_reply_shapes(list(tools), choice))
        return
    parsed = parse_reply(
        reply["text"], specs, choice, tolerant=True, cut_off=reply["cut_off"], token_limit=TOKEN_LIMIT
    )
    if "final" in expect:
        assert isinstance(parsed.result, Final)
        assert parsed.result.content == expect["final"]
        return
    assert isinstance(parsed.result, ToolRequests)
    requests = parsed.result.requests
    assert [[request.name, request.arguments] for request in requests] == expect["calls"]
    told = [choice_refusal(request, choice) or request_problem(request, tools) for request in requests]
    assert [message is None for message in told] == [phrase is None for phrase in expect["tool_errors"]]
    for message, phrase in zip(told, expect["tool_errors"], strict=True):
        assert message is None or phrase in message
