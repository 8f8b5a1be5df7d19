#!/usr/bin/env python3
"""The summary of load-test runs (loadtest/http/summary.py) must judge each
goal by both of its measures and stay in step with the committed runs.

  - a synthetic run whose 1,000-connection CPU ratio is under 1.10 by the
    medians and over it by the per-round ratios is "split" on that goal, and
    the run as a whole is not "met"; the same run with the ratio under the
    line both ways is "met";
  - a goal at exactly its bound is met ("ge" and "le"); a round that
    failed (no figure, 0 requests/s) is left out of the ratios as bench.py
    leaves it out; a ratio that misses never prints as its bound;
  - the pooled figures over several runs are the median of all their
    per-round ratios and the median of their ratios of medians;
  - a run lacking a server or a scenario is left out; one with wrk errors
    or non-2xx answers is marked;
  - known committed runs are rows of loadtest/results/summary.md in the
    order of their commits, and that file is what the script writes
    now (rerun `python3 loadtest/http/summary.py loadtest/results
    loadtest/results/summary.md` after adding or correcting a results
    file by hand; loadtest/run.sh does it after its own runs).

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

# At the bound: met, also a last bit above it from a division's rounding.
at_bound = summary.judge(run([7.7, 7.7, 7.7], [7.0, 7.0, 7.0]))
check(goal(at_bound, "1,000 conns CPU/req vs floor")[2] == "met", "a ratio of exactly 1.10")
check(summary.holds(1.1000000000000001, "le", 1.10) and summary.holds(0.9999999999999999, "ge", 1.0),
      "a bound missed by the last bit of a double")
check(not summary.holds(1.1001, "le", 1.10) and not summary.holds(0.9999, "ge", 1.0),
      "a bound missed by a ten-thousandth")

# A failed round (wrk's rps 0, no CPU figure) is left out as bench.py leaves
# it out: per round of the other two, 1.0 and 1.0, not a median dragged to 0.
failed = run([7.0, None, 7.0], [7.0, 7.0, 7.0])
failed["rounds"]["c1000"]["goro"][1]["rps"] = 0.0
pair = summary.ratios(failed["rounds"]["c1000"]["goro"], failed["rounds"]["c1000"]["floor"], "cpu_us")
check(pair == (1.0, 1.0), f"a round without CPU: {pair}")
pair = summary.ratios(failed["rounds"]["c1000"]["goro"], failed["rounds"]["c1000"]["nginx"], "rps")
check(pair is not None and pair[1] == 1.0, f"a round at 0 requests/s, per round: {pair}")
check(summary.ratios([{"cpu_us": None}], [{"cpu_us": 7.0}], "cpu_us") is None,
      "no figure at all: no ratio")

# Shown away from the goal's side: a miss never prints as its bound.
check(summary.shown(0.99998, "ge") == "0.999", summary.shown(0.99998, "ge"))
check(summary.shown(1.1004, "le") == "1.101", summary.shown(1.1004, "le"))
check(summary.shown(1.0, "ge") == "1.000" and summary.shown(1.1, "le") == "1.100",
      "a ratio at its bound prints as the bound")

# Pooled over two runs: the per-round ratios 1.17, 1.08, 1.25 and 15/14,
# 7.6/7, 7.4/7 together (median of six: between 1.08 and 7.6/7), and the
# runs' ratios of medians 1.08 and 7.5/7.
two = [("a", run([11.7, 10.8, 10.0], [10.0, 10.0, 8.0])), ("b", run([7.5, 7.6, 7.4], [7.0] * 3))]
per, meds, n = summary.pooled(two, "c1000", "floor", "cpu_us")
check(n == 6 and abs(per - (1.08 + 7.6 / 7) / 2) < 1e-9, f"pooled per-round {per} over {n}")
check(abs(meds - (1.08 + 7.5 / 7) / 2) < 1e-9, f"pooled run medians {meds}")

erred = run([7.0] * 3, [7.0] * 3)
erred["errors"] = True
check("| x (errors) |" in summary.render([("x", erred)]), "a run with errors is not marked")

# Tallied apart by machine instance, the latest run's first.
fast, slow = run([7.0] * 3, [7.0] * 3), run([9.0] * 3, [7.0] * 3)
fast["machine"] = "2 cores (AMD EPYC), Linux 6.18.44-fc-v595, cpuidle haltpoll; go version"
slow["machine"] = "2 cores (AMD EPYC), Linux 6.18.44-fc-v782; go version"
check(summary.machine_kind(fast) == "6.18.44-fc-v595" and summary.machine_kind(slow) ==
      "6.18.44-fc-v782" and summary.machine_kind({}) == "?", "machine kinds")
text = summary.render([("f1", fast), ("s1", slow), ("f2", fast)])
a, b = text.find("## Runs on `6.18.44-fc-v595` (2)"), text.find("## Runs on `6.18.44-fc-v782` (1)")
check(0 <= a < b, f"sections by machine at {a}, {b}")
check("1,000 conns CPU/req vs floor: 2 / 0 / 0" in text[a:b]
      and "1,000 conns CPU/req vs floor: 0 / 0 / 1" in text[b:], "each section counts its own runs")
check("| s1 | `0000000` | `6.18.44-fc-v782` | 3 |" in text, "the row names its machine")

lacking = run([7.0] * 3, [7.0] * 3)
del lacking["rounds"]["c1000"]["nginx"]
check(not summary.usable(lacking), "a run without nginx at c1000 is not summarized")

results = os.path.join(ROOT, "loadtest", "results")
runs = summary.load_runs(results)
check(len(runs) >= 40, f"only {len(runs)} committed runs found")
with open(os.path.join(results, "summary.md")) as f:
    committed = f.read()
# The order of the rows comes from git (the commits' times): outside a
# checkout (a source tarball) only the rows themselves can be compared.
in_git = all(summary.commit_time(results, str(r.get("commit", ""))) is not None for _, r in runs)
if in_git:
    check(committed == summary.render(runs),
          "loadtest/results/summary.md is not what summary.py writes now")
else:
    check(sorted(committed.splitlines()) == sorted(summary.render(runs).splitlines()),
          "loadtest/results/summary.md does not hold the rows summary.py writes now")
# Runs known to qualify, in the order they were measured (by their commits).
rows = [committed.find(f"| {name} |") for name in
        ("2026-11-25", "2026-11-27", "2026-11-27-clock", "2026-11-28-s22a", "2026-11-29-s25a")]
check(all(r >= 0 for r in rows) and rows == sorted(rows), f"known runs' rows at {rows}")

CHECKS.finish(f"{len(runs)} committed runs")
