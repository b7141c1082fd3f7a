"""Two runs of the task suite side by side: which tasks a change won and lost, split by split, and
whether the difference is larger than the noise.

The comparison is paired: only tasks both runs finished count. Under no real effect, each task whose
outcome differs is as likely to flip one way as the other, so the net gain (won minus lost) has a
spread of the square root of the tasks that flipped. The noise band is twice that (about 95%): a
change wins when its net gain on held_out is larger, as the sign test would have it.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localagent.core.user_files import read_user_text
from localagent.errors import UserFileError
from localagent.evaluation.tasks import SPLITS


@dataclass(frozen=True)
class SideFigures:
    successes: int
    median_seconds: float
    p90_seconds: float
    turns_per_task: float


@dataclass(frozen=True)
class SplitComparison:
    split: str
    tasks: int
    before: SideFigures
    after: SideFigures
    won: tuple[str, ...]  # tasks the second run passes and the first fails
    lost: tuple[str, ...]

    @property
    def net(self) -> int:
        return len(self.won) - len(self.lost)

    @property
    def noise_band(self) -> float:
        return 2 * math.sqrt(len(self.won) + len(self.lost))

    @property
    def verdict(self) -> str:
        if self.net > self.noise_band:
            return "wins"
        if self.net < -self.noise_band:
            return "loses"
        return "within the noise"


def read_run(path: Path) -> list[dict[str, Any]]:
    """The per-task results of `localagent eval tasks --json`."""
    text = read_user_text(path, "results file", UserFileError)
    try:
        tasks = json.loads(text)["tasks"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise UserFileError(f"{path} is not the output of `localagent eval tasks --json`") from None
    return [task for task in tasks if isinstance(task, dict) and "id" in task and "success" in task]


def compare(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[SplitComparison]:
    """Both runs on the tasks both finished, split by split."""
    first = {task["id"]: task for task in before}
    second = {task["id"]: task for task in after}
    shared = [task_id for task_id in first if task_id in second]
    comparisons = []
    for split in SPLITS:
        ids = [task_id for task_id in shared if first[task_id].get("split") == split]
        if not ids:
            continue
        won = tuple(i for i in ids if second[i]["success"] and not first[i]["success"])
        lost = tuple(i for i in ids if first[i]["success"] and not second[i]["success"])
        comparisons.append(
            SplitComparison(
                split,
                len(ids),
                _figures([first[i] for i in ids]),
                _figures([second[i] for i in ids]),
                won,
                lost,
            )
        )
    return comparisons


def _figures(tasks: list[dict[str, Any]]) -> SideFigures:
    seconds = sorted(float(task.get("seconds", 0.0)) for task in tasks)
    p90_at = (len(seconds) - 1) * 0.9
    low = int(p90_at)
    high = min(low + 1, len(seconds) - 1)
    p90 = seconds[low] + (seconds[high] - seconds[low]) * (p90_at - low)
    return SideFigures(
        successes=sum(bool(task["success"]) for task in tasks),
        median_seconds=statistics.median(seconds),
        p90_seconds=p90,
        turns_per_task=sum(int(task.get("turns", 0)) for task in tasks) / len(tasks),
    )


def render(comparisons: list[SplitComparison], before_name: str, after_name: str) -> str:
    if not comparisons:
        return "the two runs share no task"
    lines = [
        f"{'split':<10}{'tasks':>6}  {'success':>15}  {'median s':>13}  {'p90 s':>13}  {'turns':>11}"
        f"  {'net':>4}  {'noise ±':>7}  verdict",
    ]
    for c in comparisons:
        b, a = c.before, c.after
        lines.append(
            f"{c.split:<10}{c.tasks:>6}  {f'{b.successes} -> {a.successes}':>15}"
            f"  {f'{b.median_seconds:.1f} -> {a.median_seconds:.1f}':>13}"
            f"  {f'{b.p90_seconds:.1f} -> {a.p90_seconds:.1f}':>13}"
            f"  {f'{b.turns_per_task:.1f} -> {a.turns_per_task:.1f}':>11}"
            f"  {c.net:>+4}  {c.noise_band:>7.1f}  {c.verdict}"
        )
    for c in comparisons:
        if c.won:
            lines.append(f"{c.split}: won by {after_name}: {', '.join(c.won)}")
        if c.lost:
            lines.append(f"{c.split}: lost by {after_name}: {', '.join(c.lost)}")
    lines.append(
        f"(first: {before_name}; second: {after_name}; noise band: 2·√(tasks whose outcome differs))"
    )
    return "\n".join(lines)
