"""Offline: what the confirm retake rule would have decided on logged planted decisions.

The planted decisions of 2026-12-01 session 5 (a noisy H200 session: single readings 5-17 %
slow) were logged as console rounds "baseline-geomean vs candidate" only, not as the three
readings of a round, so this replays an approximation: a round is transient when its baseline
geometric mean is 1.5 % (half of the 3 % limit, one of two readings) or its candidate 3 %
above the decision's median; a retake draws a round at random (fixed seed) from the same
session's logged rounds, transient ones included, within the rule's budget (2 tries a round,
10 in all). The acceptance here is a fixed 1.01 threshold without ε (the gate's is
1 + max(ε, γ − 1)), and candidate-only transients are retaken freely (the first rule; the gate
now caps them at the baseline's count): an optimistic estimate, not a measurement. Rounds
marked "(retake" in newer logs are skipped (this replays first takes only).

    tar -xJf bench/results/2026-12-01-h200-measure/raw.tar.xz -C /tmp logs.tar.gz
    python3 bench/retake_replay.py /tmp/logs.tar.gz
"""

from __future__ import annotations

import random
import re
import statistics
import sys
import tarfile

from scipy.stats import binomtest

ROUND = re.compile(r"confirm round (\d+): ([\d.]+) vs ([\d.]+) ms")


def decisions(text: str) -> list[list[tuple[float, float]]]:
    out: list[list[tuple[float, float]]] = []
    for line in text.splitlines():
        match = ROUND.search(line)
        if match is None or "(retake" in line:
            continue
        if match.group(1) == "1":
            out.append([])
        out[-1].append((float(match.group(2)), float(match.group(3))))
    return out


def accepted(rounds: list[tuple[float, float]]) -> bool:
    ratios = [b / c for b, c in rounds]
    wins = sum(r > 1.0 for r in ratios)
    p = binomtest(wins, len(ratios), 0.5, alternative="greater").pvalue
    return p <= 0.01 and statistics.median(ratios) > 1.01


def main() -> int:
    with tarfile.open(sys.argv[1]) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if "planted" not in member.name or not member.isfile():
                continue
            logged = decisions(tar.extractfile(member).read().decode())  # type: ignore[union-attr]
            pool = [r for d in logged for r in d]
            rng = random.Random(0)
            before = after = 0
            for rounds in logged:
                mb = statistics.median(b for b, _ in rounds)
                mc = statistics.median(c for _, c in rounds)

                def transient(r: tuple[float, float], mb: float = mb, mc: float = mc) -> bool:
                    return r[0] > mb * 1.015 or r[1] > mc * 1.03

                budget, replayed = 10, []
                for r in rounds:
                    for _ in range(2):
                        if not transient(r) or budget == 0:
                            break
                        budget -= 1
                        r = rng.choice(pool)
                    replayed.append(r)
                before += accepted(rounds)
                after += accepted(replayed)
            print(f"{member.name}: {len(logged)} decisions, detected {before} as logged, "
                  f"{after} with retakes (estimate)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
