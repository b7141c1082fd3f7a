"""`localagent eval compare`: two suite runs side by side, split by split, against the noise band."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from localagent.cli import cli
from localagent.evaluation.compare import compare


def task(task_id: str, split: str, success: bool, seconds: float = 10.0, turns: int = 2) -> dict:
    return {"id": task_id, "split": split, "success": success, "seconds": seconds, "turns": turns}


def test_a_net_gain_larger_than_the_noise_wins_and_a_small_one_does_not() -> None:
    before = [task(f"t{i}", "held_out", i < 5) for i in range(20)]
    after = [task(f"t{i}", "held_out", i < 14) for i in range(20)]  # 9 won, none lost
    (held_out,) = compare(before, after)
    assert (held_out.tasks, held_out.net, len(held_out.won), held_out.lost) == (20, 9, 9, ())
    assert held_out.noise_band == 6.0 and held_out.verdict == "wins"
    mixed = [task(f"t{i}", "held_out", i < 3 or 5 <= i < 9) for i in range(20)]  # 4 won, 2 lost
    (small,) = compare(before, mixed)
    assert (small.net, small.verdict) == (2, "within the noise")
    (worse,) = compare(after, before)
    assert worse.verdict == "loses"


def test_only_tasks_both_runs_finished_count_and_splits_stay_apart() -> None:
    before = [task("a", "dev", False), task("b", "held_out", True), task("c", "held_out", False)]
    after = [task("a", "dev", True, seconds=4.0, turns=1), task("b", "held_out", True)]
    dev, held_out = compare(before, after)
    assert (dev.split, dev.tasks, dev.won, dev.after.median_seconds, dev.after.turns_per_task) == (
        "dev",
        1,
        ("a",),
        4.0,
        1.0,
    )
    assert (held_out.split, held_out.tasks, held_out.net) == ("held_out", 1, 0)


def test_the_command_prints_both_runs_and_the_verdict(tmp_path: Path) -> None:
    first, second = tmp_path / "base.json", tmp_path / "new.json"
    first.write_text(json.dumps({"tasks": [task(f"t{i}", "held_out", False) for i in range(10)]}))
    second.write_text(
        json.dumps({"tasks": [task(f"t{i}", "held_out", i < 8, seconds=5.0) for i in range(10)]})
    )
    result = CliRunner().invoke(cli, ["eval", "compare", str(first), str(second)])
    assert result.exit_code == 0, result.output
    row = result.stdout.splitlines()[1].split()
    assert row[:5] == ["held_out", "10", "0", "->", "8"]
    assert row[-1] == "wins" and "10.0 -> 5.0" in result.stdout
    assert "held_out: won by new.json: t0, t1, t2, t3, t4, t5, t6, t7" in result.stdout


def test_a_file_that_is_not_a_results_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    result = CliRunner().invoke(cli, ["eval", "compare", str(bad), str(bad)])
    assert result.exit_code == 2
    assert (
        result.stderr.strip()
        == f"localagent: error: {bad} is not the output of `localagent eval tasks --json`"
    )
