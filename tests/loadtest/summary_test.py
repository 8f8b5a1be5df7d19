#!/usr/bin/env python3
"""The summary of load-test runs (loadtest/http/summary.py) must judge each
goal by both of its measures and stay in step with the committed runs.

  - a synthetic run whose 1,000-connection CPU ratio is under 1.10 by the
    medians and over it by the per-round ratios is "split" on that goal, and
    the run as a whole is not "met"; the same run with the ratio under the
    line both ways is "met";
  - a "ge" goal (requests/s against nginx) at exactly its bound is met;
  - a run lacking a server or a scenario is left out;
  - every committed run of the four servers is a row of
    loadtest/results/summary.md, and that file is what the script writes
    now (rerun `python3 loadtest/http/summary.py loadtest/results
    loadtest/results/summary.md` after adding a run).

  python3 tests/loadtest/summary_test.py ROOT
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checks import Checks  # noqa: E402

CHECKS = Checks("summary_test", os.path.join("loadtest", "http"))
ROOT = CHECKS.root
check = CHECKS.check
import summary  # noqa: E402


def rounds(**series):
    """{metric: [v0, v1, ...]} -> [{metric: v0, ...}, ...]"""
    n = len(next(iter(series.values())))
    return [{k: v[i] for k, v in series.items()} for i in range(n)]


def run(c1000_goro_cpu, c1000_floor_cpu):
    ok = rounds(cpu_us=[7.0, 7.0, 7.0], rps=[100.0, 100.0, 100.0], p99=[1.0, 1.0, 1.0])
    base = {
        "plaintext": {"goro": ok, "go": ok, "nginx": ok, "floor": ok},
        "pipelined16": {"goro": ok, "go": ok, "nginx": ok, "floor": ok},
        "c1000": {
            "goro": rounds(cpu_us=c1000_goro_cpu, rps=[100.0] * 3, p99=[1.0] * 3),
            "go": rounds(cpu_us=[14.0] * 3, rps=[50.0] * 3, p99=[3.0] * 3),
            "nginx": ok,
            "floor": rounds(cpu_us=c1000_floor_cpu, rps=[100.0] * 3, p99=[1.0] * 3),
        },
    }
    idle = [{"server": "goro", "n": 5000, "per_conn_kib": 1.05},
            {"server": "goro", "n": 10000, "per_conn_kib": 1.00}]
    return {"commit": "0" * 40, "rounds": base, "idle": idle}


def goal(row, label):
    return next(g for g in row["goals"] if g[0] == label)


# Medians: 10.8 / 10.0 = 1.08 (under 1.10). Per round: 11.7/10 = 1.17,
# 10.8/10 = 1.08, 10.0/8.0 = 1.25, median 1.17 (over).
split = summary.judge(run([11.7, 10.8, 10.0], [10.0, 10.0, 8.0]))
label, pair, verdict = goal(split, "1,000 conns CPU/req vs floor")
check(abs(pair[0] - 1.08) < 1e-9 and abs(pair[1] - 1.17) < 1e-9, f"ratios {pair}")
check(verdict == "split", f"split run judged {verdict}")
check(split["all"] == "split", f"split run as a whole: {split['all']}")

met = summary.judge(run([7.5, 7.6, 7.4], [7.0, 7.0, 7.0]))
check(goal(met, "1,000 conns CPU/req vs floor")[2] == "met", "run under the line both ways")
check(goal(met, "keep-alive req/s vs nginx")[2] == "met", "req/s equal to nginx's is >= 1.00")
check(met["all"] == "met", f"good run as a whole: {met['all']}")

missed = summary.judge(run([9.0, 9.0, 9.0], [7.0, 7.0, 7.0]))
check(goal(missed, "1,000 conns CPU/req vs floor")[2] == "missed", "1.29 both ways")
check(missed["all"] == "missed", f"missed run as a whole: {missed['all']}")

lacking = run([7.0] * 3, [7.0] * 3)
del lacking["rounds"]["c1000"]["nginx"]
check(not summary.usable(lacking), "a run without nginx at c1000 is not summarized")

results = os.path.join(ROOT, "loadtest", "results")
runs = summary.load_runs(results)
check(len(runs) >= 40, f"only {len(runs)} committed runs found")
text = summary.render(runs)
for name, _ in runs:
    check(f"| {name} |" in text, f"run {name} has no row")
with open(os.path.join(results, "summary.md")) as f:
    check(f.read() == text, "loadtest/results/summary.md is not what summary.py writes now")

CHECKS.finish(f"{len(runs)} committed runs")
