"""Figures for the paper: the learning-rate sweep, and accuracy against MACs.

Usage:
    python scripts/plot_sweep.py results/run_lr_sweep.tsv paper/figures/lr_sweep.pdf
    python scripts/plot_sweep.py --scatter results/baselines.csv paper/figures/acc_vs_macs.pdf
"""

import argparse
import csv
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def sweep(path: str, out: str) -> None:
    runs: dict[int, dict[float, list[float]]] = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            runs[int(row["batch_size"])][float(row["lr"])].append(float(row["test_acc"]))
    fig, ax = plt.subplots(figsize=(3.4, 2.4))
    for batch, by_lr in sorted(runs.items()):
        lrs = sorted(by_lr)
        means = [sum(by_lr[lr]) / len(by_lr[lr]) for lr in lrs]
        lows = [m - min(by_lr[lr]) for m, lr in zip(means, lrs)]
        highs = [max(by_lr[lr]) - m for m, lr in zip(means, lrs)]
        ax.errorbar(lrs, means, yerr=[lows, highs], marker="o", capsize=2, label=f"batch {batch}")
    ax.set_xscale("log")
    ax.set_xlabel("peak learning rate")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(frameon=False)
    fig.tight_layout()
    fig.savefig(out)


def scatter(path: str, out: str) -> None:
    fig, ax = plt.subplots(figsize=(3.4, 2.4))
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            ax.scatter(float(row["macs_m"]), float(row["test_acc"]))
            ax.annotate(row["model"], (float(row["macs_m"]), float(row["test_acc"])), fontsize=6)
    ax.set_xlabel("MACs per clip (M)")
    ax.set_ylabel("test accuracy (%)")
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--scatter", action="store_true")
    parser.add_argument("path")
    parser.add_argument("out")
    args = parser.parse_args()
    (scatter if args.scatter else sweep)(args.path, args.out)
