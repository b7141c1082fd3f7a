"""The tool_call format on a real instruct model, Qwen2.5-Coder-0.5B-Instruct, whose chat template
lays out the tools and which is trained to call them in `<tool_call>` tags: a run of several steps
where every reply is well formed and each step evaluates only the tokens added since the last."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from turn_runs import assert_well_formed, run_steps

from localagent.agent import opening_messages
from localagent.backends.llama_runtime import LoadSettings
from localagent.backends.local_generator import LocalSettings
from localagent.backends.local_turn import open_local_turn
from localagent.core.messages import (
    Final,
    NamedToolChoice,
    ToolChoice,
)
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.models.registry import ResolvedModel
from localagent.tools import Tool

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("instruct_model", ["qwen2.5-coder-0.5b-instruct"], indirect=True)
def test_a_run_in_the_tool_call_format_reuses_every_token_of_the_last_step(
    instruct_model: ResolvedModel, default_tools: list[Tool], sample_workspace: Path
) -> None:
    turn = open_local_turn(
        instruct_model, LoadSettings(n_ctx=4096), LocalSettings(max_tokens=120), tool_format="tool_call"
    )
    assert isinstance(turn.format, ToolCallFormat)  # `auto` picks it for a template that lays out tools
    # Calls open the reply: given a line of preface first, this model writes its guess at the
    # answer there, then repeats itself to the token limit (measured at temperature 0).
    turn.format = ToolCallFormat(turn.format.template, preface=False)
    messages = opening_messages("What does notes.txt say, and what is 17 * 23?", sample_workspace)
    choices: list[ToolChoice] = [
        NamedToolChoice(name="read_file"),
        NamedToolChoice(name="calculator"),
        "required",
        "none",
    ]
    for choice, result in zip(choices, run_steps(turn, default_tools, choices, messages), strict=True):
        assert_well_formed(result, default_tools, choice)
    assert isinstance(result, Final)

    steps = turn.generator.steps
    assert len(steps) == len(choices)
    assert all(step.generation.stop == "end" and step.decoder == "llguidance" for step in steps)
    for before, step in itertools.pairwise(steps):
        # The KV cache held the last prompt and the reply's own tokens; only what is new was evaluated.
        assert step.evaluated_prompt_tokens == step.new_prompt_tokens
        reply = before.generation.stats.generated_tokens
        assert step.prompt_tokens == before.prompt_tokens + reply + step.new_prompt_tokens
        assert step.new_prompt_tokens < 200
