"""A person at a real terminal: approval prompts, the chat session and Ctrl-C, driven through a pty."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from localagent.loop.transcript import read_messages
from localagent.turn import prompts

WRITE = 'Thought: save it\nAction: write_file\nAction Input: {"path": "out.txt", "content": "hello"}\n'
DONE = "Thought: done\nFinal Answer: finished"
PROMPT = r"you(\x1b\[0m)?> "  # the prompt word is bold


def script(tmp_path: Path, items: list) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    return f"script:{path}"


def spawn(args: list[str], cwd: Path, **env: str) -> pexpect.spawn:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "localagent", *args],
        cwd=str(cwd),
        env={**os.environ, "COLUMNS": "120", "TERM": "dumb", **env},
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 120),
    )
    child.logfile_read = None
    return child


@pytest.mark.parametrize(("answer", "written"), [("y", True), ("n", False)])
def test_run_asks_before_writing_and_shows_the_diff(tmp_path: Path, answer: str, written: bool) -> None:
    model = script(tmp_path, [WRITE, DONE])
    child = spawn(["run", "save hello", "--model", model, "--tools", "default,write_file"], tmp_path)
    child.expect(r"\+hello")
    child.expect(r"Allow write_file\? \[y\]es / \[n\]o / \[a\]lways for write_file")
    child.sendline(answer)
    child.expect("Created out.txt" if written else "Tool error: the user did not approve write_file")
    child.expect("finished")
    child.expect("Changed: out.txt" if written else "No file was changed.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert (tmp_path / "out.txt").exists() is written


def test_always_approves_the_rest_of_the_run(tmp_path: Path) -> None:
    second = WRITE.replace("out.txt", "two.txt")
    model = script(tmp_path, [WRITE, second, DONE])
    child = spawn(["run", "save twice", "--model", model, "--tools", "default,write_file"], tmp_path)
    child.expect("Allow write_file")
    child.sendline("a")
    child.expect("finished")
    child.expect(pexpect.EOF)
    assert "Allow write_file" not in child.before
    assert (tmp_path / "out.txt").read_text() == "hello"
    assert (tmp_path / "two.txt").read_text() == "hello"


def test_chat_says_after_each_answer_what_it_changed(tmp_path: Path) -> None:
    claim = "Thought: again\nFinal Answer: out.txt now says hello twice"
    model = script(tmp_path, [WRITE, DONE, claim])
    child = spawn(["chat", "--model", model, "--tools", "default,write_file", "--yes"], tmp_path)
    child.expect(PROMPT)
    child.sendline("save hello")
    child.expect("finished")
    child.expect("Changed: out.txt")
    child.expect(PROMPT)
    child.sendline("say it twice")
    child.expect("hello twice")
    child.expect("No file was changed.")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    assert (tmp_path / "out.txt").read_text() == "hello"


def test_chat_keeps_history_and_answers_slash_commands(tmp_path: Path) -> None:
    model = script(
        tmp_path,
        [
            "Thought: greet\nFinal Answer: hello there",
            'Thought: count\nAction: calculator\nAction Input: {"expression": "6 * 7"}\n',
            "Thought: known\nFinal Answer: it is 42",
        ],
    )
    child = spawn(["chat", "--model", model], tmp_path)
    child.expect(PROMPT)
    child.sendline("hi")
    child.expect("hello there")
    child.expect(PROMPT)
    child.sendline("/tools")
    child.expect("list_dir, read_file, search_text, calculator")
    child.expect(PROMPT)
    child.sendline("what is 6 times 7?")
    child.expect(r"calculator\S* \{\"expression\": \"6 \* 7\"\}")
    child.expect("it is 42")
    child.expect(PROMPT)
    saved = tmp_path / "history.json"
    child.sendline(f"/save {saved}")
    child.expect("saved 7 messages")
    child.expect(PROMPT)
    child.sendline("/reset")
    child.expect("history cleared")
    child.sendline("/quit")
    child.expect("transcript: ")
    child.expect(pexpect.EOF)
    history = json.loads(saved.read_text())
    assert [m["role"] for m in history] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    # each question comes after the lines of the files that share its words, when there are some
    assert prompts.question_of(history[3]["content"]) == "what is 6 times 7?"


def test_first_ctrl_c_cancels_cleanly_and_keeps_the_transcript(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text(
        "from localagent.core.cancel import CancelToken\n\n"
        "def wait(seconds: float, cancel: CancelToken) -> str:\n"
        '    """Wait, unless cancelled."""\n'
        '    return "cancelled" if cancel.wait(seconds) else "waited"\n'
    )
    call = 'Thought: wait\nAction: wait\nAction Input: {"seconds": 60}\n'
    model = script(tmp_path, [call, DONE])
    transcript = tmp_path / "t.jsonl"
    child = spawn(
        ["run", "wait", "--model", model, "--tools", "slow.py:wait", "--transcript", str(transcript)],
        tmp_path,
    )
    child.expect(r"wait\S* \{\"seconds\": 60\}")
    child.sendintr()
    child.expect("cancelling")
    child.expect("status cancelled")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    messages = read_messages(transcript)
    assert messages[-1].role == "tool"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert records[-1]["type"] == "run_finished" and records[-1]["status"] == "cancelled"


def test_ctrl_c_at_the_approval_question_cancels_at_once(tmp_path: Path) -> None:
    model = script(tmp_path, [WRITE, DONE])
    child = spawn(["run", "save hello", "--model", model, "--tools", "default,write_file"], tmp_path)
    child.expect(r"Allow write_file\? \[y\]es / \[n\]o / \[a\]lways for write_file")
    child.sendintr()  # and no Enter after it
    child.expect("status cancelled")  # without an Enter: before the fix it waited for one
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert not (tmp_path / "out.txt").exists()


def run_output(tmp_path: Path, **env: str) -> str:
    """Everything a run with a tool call and an edit's diff shows on a terminal, escapes included."""
    workspace = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    workspace.mkdir()
    model = script(tmp_path, [WRITE, DONE])
    child = spawn(["run", "save hello", "--model", model, "--tools", "default,write_file"], workspace, **env)
    child.expect("Allow write_file")
    shown = child.before
    child.sendline("y")
    child.expect(pexpect.EOF)
    return shown + child.before


COLOR = re.compile(r"\x1b\[[0-9;]*m")


def test_colors_on_a_terminal_unless_no_color_or_a_dumb_terminal(tmp_path: Path) -> None:
    assert COLOR.search(run_output(tmp_path, TERM="xterm-256color"))
    for env in ({"TERM": "xterm-256color", "NO_COLOR": "1"}, {"TERM": "dumb"}):
        shown = run_output(tmp_path, **env)
        assert "+hello" in shown and "finished" in shown
        assert not COLOR.search(shown), (env, shown)


def test_chat_lines_can_be_edited_and_recalled_with_up(tmp_path: Path) -> None:
    model = script(tmp_path, ["Thought: a\nFinal Answer: first", "Thought: b\nFinal Answer: second"])
    state = tmp_path / "state"
    child = spawn(["chat", "--model", model], tmp_path, TERM="xterm", XDG_STATE_HOME=str(state))
    child.expect("you")
    child.send("helo wrld")
    child.send("\x1b[D" * 3 + "o")  # Left three times, then the missing letter
    child.send("\x01" + "\x1b[C" * 3 + "l\r")  # Ctrl-A to the start, Right three times
    child.expect("first")
    child.expect("you")
    child.send("\x1b[A\r")  # Up: the line before, again
    child.expect("second")
    child.expect("you")
    saved = tmp_path / "history.json"
    child.send(f"/save {saved}\r")
    child.expect("saved")
    child.sendeof()
    child.expect(pexpect.EOF)
    # The first task opens with the workspace listing, each with the evidence found for it; each
    # question is what was typed.
    users = [prompts.question_of(m["content"]) for m in json.loads(saved.read_text()) if m["role"] == "user"]
    assert users == ["hello world", "hello world"]
    kept = (state / "localagent" / "chat_history").read_text().splitlines()
    assert kept[-2:] == ["hello world", f"/save {saved}"]


def test_a_failing_edit_is_never_asked_about_and_a_valid_one_shows_its_diff_first(tmp_path: Path) -> None:
    (tmp_path / "list.md").write_text("- [ ] call the piano tuner\n- [ ] post the parcel\n")
    read = 'Thought: look\nAction: read_file\nAction Input: {"path": "list.md"}\n'
    failing = (
        "Thought: tick\nAction: replace_in_file\n"
        'Action Input: {"path": "list.md", "old": "- [ ] call the glazier", "new": "- [x] call"}\n'
    )
    valid = failing.replace("glazier", "piano tuner").replace('"- [x] call"', '"- [x] call the piano tuner"')
    model = script(tmp_path, [read, failing, failing, valid, DONE])
    child = spawn(["run", "tick it", "--model", model, "--tools", "default,edit"], tmp_path)
    child.expect(r"Allow replace_in_file\?")
    before_question = child.before
    child.sendline("y")
    child.expect("finished")
    child.expect(pexpect.EOF)
    # The failing call is shown twice, refused with the model's tool error, and never asked about.
    assert before_question.count("old was not found in list.md") == 2, before_question
    assert before_question.count("glazier") >= 2
    # The valid call's line and its diff come before the one question.
    call_line = before_question.rindex("replace_in_file")
    assert before_question.index("-- [ ] call the piano tuner") > call_line
    assert before_question.index("+- [x] call the piano tuner") > call_line
    assert "Allow" not in before_question
    assert "Allow" not in child.before
    assert (tmp_path / "list.md").read_text().startswith("- [x] call the piano tuner\n")


def test_a_declined_edit_made_again_is_not_asked_about_again(tmp_path: Path) -> None:
    model = script(tmp_path, [WRITE, WRITE, DONE])
    child = spawn(["run", "save hello", "--model", model, "--tools", "default,write_file"], tmp_path)
    child.expect("Allow write_file")
    child.logfile_read = shown = io.StringIO()
    child.sendline("n")
    child.expect(pexpect.EOF)
    assert "finished" in shown.getvalue()
    assert "Allow write_file" not in shown.getvalue()
    assert shown.getvalue().count("the user did not approve write_file") == 2
    assert not (tmp_path / "out.txt").exists()


@pytest.mark.slow
def test_ctrl_c_in_chat_is_back_at_the_prompt_within_a_second(tmp_path: Path) -> None:
    import time

    from localagent.models.registry import EMBEDDED_MODEL

    child = spawn(["chat", "--model", EMBEDDED_MODEL, "--tools", "none", "--max-tokens", "2000"], tmp_path)
    child.timeout = 120
    child.expect(PROMPT)
    # A long question: its prompt takes seconds to read, then the reply runs to its token limit.
    child.sendline("Write a very long story about a lighthouse keeper. " + "Make it long. " * 300)
    child.expect("step 1")
    waits = []
    for delay in (0.3, 4.0):  # while the prompt is read, then while the reply is written
        time.sleep(delay)
        pressed = time.monotonic()
        child.sendintr()
        child.expect(PROMPT)
        waits.append(time.monotonic() - pressed)
        child.sendline("Write a very long story about a lighthouse keeper. " + "Make it long. " * 300)
        child.expect("step 1")
    child.sendintr()
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)
    print(f"Ctrl-C back at the prompt after {', '.join(f'{w:.2f} s' for w in waits)}")
    assert max(waits) < 1.0, waits


def test_a_repeated_call_is_shown_like_any_call(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    read = 'Thought: look\nAction: read_file\nAction Input: {"path": "a.txt"}\n'
    model = script(tmp_path, [read, read, DONE])
    child = spawn(["run", "read it", "--model", model], tmp_path)
    child.logfile_read = shown = io.StringIO()
    child.expect(pexpect.EOF)
    text = shown.getvalue()
    assert text.count('read_file {"path": "a.txt"}') == 2, text
    assert "(repeated call)" in text


def test_a_reply_read_loosely_says_what_was_taken_as_what(tmp_path: Path) -> None:
    (tmp_path / "lock.md").write_text("The sluice opens at dawn.\n")
    plain = "Thought: look\nAction: read_file\nAction Input: lock.md\n"
    model = script(tmp_path, [plain, DONE])
    child = spawn(["run", "read it", "--model", model], tmp_path)
    child.logfile_read = shown = io.StringIO()
    child.expect(pexpect.EOF)
    text = shown.getvalue()
    assert "(reading the reply: read the plain text input of read_file as its 'path' argument)" in text
    assert "The sluice opens at dawn." in text


@pytest.mark.slow
@pytest.mark.parametrize("quiet", [False, True])
def test_a_live_line_counts_a_long_turn_on_a_terminal_and_is_gone_at_the_end(
    tmp_path: Path, quiet: bool
) -> None:
    # The default model and a reply that runs into the token limit: on a fast machine a short
    # reply, or the tiny model's, is over before the line's first second, leaving no count to see.
    task = "Write every number from 1 to 200, separated by commas."
    flags = [
        "--tools",
        "none",
        "--max-tokens",
        "300",
        *(["--quiet"] if quiet else []),
    ]
    child = spawn(["run", task, *flags], tmp_path)
    child.timeout = 180
    child.logfile_read = shown = io.StringIO()
    child.expect(pexpect.EOF)
    text = shown.getvalue()
    assert re.search(r"\r  … \d+ s, \d+ tokens", text), text[-500:]
    # Erased before the answer: spaces over the whole line, after its last count.
    last = text.rindex(" tokens")
    assert re.search(r"\r {10,}\r", text[last:]), text[last:][:200]
    piped = subprocess.run(
        [sys.executable, "-m", "localagent", "run", task, *flags],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert not re.search(r"… \d+ s", piped.stderr) and "\r" not in piped.stderr
