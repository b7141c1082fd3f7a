"""Mean and standard deviation of the test accuracy in a results TSV, optionally per group.

Usage: python scripts/aggregate.py results/run_final_seeds.tsv [--by COLUMN]
"""

import argparse
import csv
import statistics
from collections import defaultdict


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("--by", default=None, help="column to group by, e.g. variant or lr")
    parser.add_argument("--metric", default="test_acc")
    args = parser.parse_args()

    groups: dict[str, list[float]] = defaultdict(list)
    with open(args.path, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            key = row[args.by] if args.by else "all"
            groups[key].append(float(row[args.metric]))

    for key, values in groups.items():
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        print(f"{key:24s} n={len(values):3d}  {statistics.mean(values):.2f} +/- {std:.2f}")


if __name__ == "__main__":
    main()
