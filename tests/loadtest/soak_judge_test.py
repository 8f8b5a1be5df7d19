#!/usr/bin/env python3
"""The soak's trend rules (loadtest/soak/soak.py judge) must fail a leak and
pass a flat run whatever the phase of the load's waves.

  - committed runs: the one before the heap trim (its RSS floor climbed
    42.6 -> 47.1 MB) fails; the runs whose floor stayed at 15 MB pass,
    among them the two the first rule failed on the waves' phase;
  - synthetic runs shaped like the soak's (RSS 15 <-> 70 MB, descriptors
    and goroutines 70 <-> 2,000, 30 s at a time) at twenty phases: flat
    passes at every phase; a floor that climbs 3 MB, peaks that climb
    10 MB, or 100 descriptors or goroutines that never go away fail at every
    phase.

  python3 tests/loadtest/soak_judge_test.py ROOT
"""

import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

CHECKS = Checks("soak_judge_test", os.path.join("loadtest", "soak"))
ROOT = CHECKS.root
check = CHECKS.check
import soak  # noqa: E402


def synthetic(phase, seconds=600, floor_leak=0.0, peak_leak=0.0, fd_leak=0, seed=1):
    """A run shaped like the soak's: 30 s high, 30 s low, with jitter."""
    rnd = random.Random(seed)
    samples = []
    for t in range(1, seconds + 1):
        frac = t / seconds
        high = ((t + phase) // 30) % 2 == 0
        rss = (70_000 + peak_leak * frac) if high else (15_500 + floor_leak * frac)
        rss += rnd.uniform(-600, 600)
        conns = 2000 if high else 70
        samples.append({"t": float(t), "rss_kib": rss, "threads": 9.0,
                        "fds": float(conns + 5 + fd_leak * frac),
                        "goroutines": float(conns + fd_leak * frac), "maxprocs": 2.0,
                        "connections": float(conns)})
    return samples


def failed_keys(samples):
    _, failures = soak.judge(samples, 60)
    return {f.split()[0] for f in failures}


results = os.path.join(ROOT, "loadtest", "results")
committed = {
    "soak-2026-11-25-before-heap-trim.csv": {"rss_kib"},
    "soak-2026-11-27-default-drained-1.csv": set(),
    "soak-2026-11-27-default-drained-2.csv": set(),
    "soak-2026-11-27-drained-gauge.csv": set(),
    "soak-2026-11-26.csv": set(),
}
for name, want in committed.items():
    got = failed_keys(soak.load_csv(os.path.join(results, name)))
    check(got == want, f"{name}: failed on {sorted(got)}, expected {sorted(want)}")

for phase in range(0, 60, 3):
    seed = phase + 7
    check(failed_keys(synthetic(phase, seed=seed)) == set(), f"flat run, phase {phase}: failed")
    check("rss_kib" in failed_keys(synthetic(phase, floor_leak=3072, seed=seed)),
          f"RSS floor +3 MB, phase {phase}: passed")
    check("rss_kib" in failed_keys(synthetic(phase, peak_leak=10240, seed=seed)),
          f"RSS peaks +10 MB, phase {phase}: passed")
    got = failed_keys(synthetic(phase, fd_leak=100, seed=seed))
    check({"fds", "goroutines"} <= got, f"100 leaked descriptors and goroutines, phase {phase}: "
          f"failed on {sorted(got)}")

CHECKS.finish()
