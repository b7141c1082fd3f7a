"""Record what local models write WITHOUT a grammar, for the tolerant parser's corpus.

Not a test: run it by hand when the corpus should grow, then review each new line's `expect`.

    .venv/bin/python tests/record_unconstrained_replies.py OUT.jsonl MODEL [MODEL ...] [--temperature T]

MODEL is a models.txt name or a .gguf path. Each model answers the everyday questions below through
the real runner (`--decoder none`, real tools on a small workspace), so later replies see real
observations. Every model turn is one JSON line: model, prompt id, tool choice, whether the reply
was cut off at the token limit, and the raw text.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from localagent.backends.factory import open_backend
from localagent.backends.reply import Reply, TextGenerator
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.core.events import TurnEventSink
from localagent.core.messages import Final, Message, SystemMessage, ToolChoice, ToolRequests, UserMessage
from localagent.formats.base import Prompt, ReplyGrammar, TextSink
from localagent.loop.runner import Runner, RunnerSettings
from localagent.settings import Settings
from localagent.tools.loading import select_tools
from localagent.tools.spec import ToolSpec
from localagent.tools.workspace import Workspace

QUESTIONS = {
    "lines": "How many lines does notes.txt have?",
    "multiply": "What is 17 * 23?",
    "listing": "Which files are in this folder?",
    "find-ada": "Which line of notes.txt mentions Ada?",
    "app-prints": "What does src/app.py print?",
    "capital": "What is the capital of France?",
    "csv-total": "What is the total of the amount column in expenses.csv?",
}
WORKSPACE_FILES = {
    "notes.txt": "buy milk\ncall Ada at 5\nwater the plants\nthe answer is 42\n",
    "src/app.py": "def main():\n    print('hello from app')\n\n\nmain()\n",
    "expenses.csv": "item,amount\nbread,2.50\ncoffee,4.20\nrent,700\n",
    "README.md": "# Demo\nA tiny project.\n",
}
SECONDS_PER_MODEL = 100.0  # no new question is started after this


class RecordingGenerator:
    """The local generator, keeping the raw text of every reply it wrote."""

    def __init__(self, generator: TextGenerator, model: str, temperature: float) -> None:
        self.generator = generator
        self.constrained = generator.constrained
        self.max_tokens = generator.max_tokens
        self.model = model
        self.temperature = temperature
        self.prompt_id = ""
        self.tool_choice: ToolChoice = "auto"
        self.records: list[dict[str, Any]] = []

    def generate(
        self,
        prompt: Prompt,
        grammar: ReplyGrammar | None,
        cancel: CancelToken,
        on_text: TextSink,
        stops: Sequence[str] = (),
    ) -> Reply:
        reply = self.generator.generate(prompt, grammar, cancel, on_text, stops)
        step = sum(1 for record in self.records if record["prompt"].startswith(self.prompt_id + "/"))
        self.records.append(
            {
                "model": self.model,
                "prompt": f"{self.prompt_id}/{step + 1}",
                "tool_choice": self.tool_choice
                if isinstance(self.tool_choice, str)
                else self.tool_choice.name,
                "cut_off": reply.stop == "length",
                "temperature": self.temperature,
                "text": reply.text,
            }
        )
        return reply


class ChoiceNoting:
    """The turn, telling the recorder which tool choice each reply was written under."""

    def __init__(self, turn: TextTurn, recorder: RecordingGenerator) -> None:
        self.turn, self.recorder, self.name = turn, recorder, turn.name

    def __call__(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        cancel: CancelToken,
        on_event: TurnEventSink | None = None,
    ) -> Final | ToolRequests:
        self.recorder.tool_choice = tool_choice
        return self.turn(messages, tools, tool_choice, cancel, on_event)


def record(model: str, max_steps: int, root: Path, temperature: float) -> list[dict[str, Any]]:
    settings = Settings(
        model=model,
        decoder="none",
        max_tokens=160,
        max_steps=max_steps,
        n_ctx=4096,
        temperature=temperature,
        seed=1,
        tool_format="react",  # the corpus is of text-tag replies
    )
    turn = open_backend(settings)
    assert isinstance(turn, TextTurn)
    recorder = RecordingGenerator(turn.generator, Path(model).stem, temperature)
    turn.generator = recorder
    tools = select_tools(None, Workspace(root))
    runner = Runner(ChoiceNoting(turn, recorder), tools, RunnerSettings(max_steps=max_steps))
    started = time.monotonic()
    for prompt_id, question in QUESTIONS.items():
        if time.monotonic() - started > SECONDS_PER_MODEL:
            break
        recorder.prompt_id = prompt_id
        # The instructions the recorded runs had; `run` now also lists the workspace's files.
        system = SystemMessage(content=f"You are a careful assistant. You work in the directory {root}.")
        runner.run([system, UserMessage(content=question)])
    print(f"{model}: {len(recorder.records)} replies in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return recorder.records


def main(out: Path, models: list[str], temperature: float) -> None:
    # A fixed path, so the prompts (and what the models copy from them) are the same on every machine.
    root = Path(tempfile.gettempdir()) / "localagent-corpus-workspace"
    shutil.rmtree(root, ignore_errors=True)
    for name, content in WORKSPACE_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    with out.open("a", encoding="utf-8") as file:
        for model in models:
            for line in record(model, max_steps=3, root=root, temperature=temperature):
                file.write(json.dumps(line, ensure_ascii=False) + "\n")
                file.flush()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("models", nargs="+")
    parser.add_argument("--temperature", type=float, default=0.0)
    arguments = parser.parse_args()
    main(arguments.out, arguments.models, arguments.temperature)
