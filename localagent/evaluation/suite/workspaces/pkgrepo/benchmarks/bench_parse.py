"""Time how long cuewright takes to read each sample file and append the results to results.csv.

Usage: python benchmarks/bench_parse.py SAMPLES_DIR

The samples are not in the repository (several are under copyright); maintainers keep them in the
project's shared drive. Each file is read REPEATS times and the median time is recorded.
"""

from __future__ import annotations

import csv
import datetime
import statistics
import sys
import time
from pathlib import Path

import cuewright

REPEATS = 25
RESULTS = Path(__file__).with_name("results.csv")
FIELDS = ["run_date", "version", "sample", "format", "size_kb", "cues", "parse_ms"]


def time_one(path: Path) -> tuple[int, float]:
    timings = []
    cues = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        cues = cuewright.load(path)
        timings.append((time.perf_counter() - started) * 1000)
    return len(cues), round(statistics.median(timings), 1)


def main(samples: Path) -> None:
    today = datetime.date.today().isoformat()
    with RESULTS.open("a", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=FIELDS)
        for path in sorted(samples.glob("*.*t")):
            count, ms = time_one(path)
            writer.writerow(
                {
                    "run_date": today,
                    "version": cuewright.__version__,
                    "sample": path.name,
                    "format": path.suffix.lstrip("."),
                    "size_kb": round(path.stat().st_size / 1024),
                    "cues": count,
                    "parse_ms": ms,
                }
            )
            print(f"{path.name:28} {count:6} cues {ms:8.1f} ms")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
