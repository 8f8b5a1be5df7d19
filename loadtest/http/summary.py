#!/usr/bin/env python3
"""Every committed load-test run against the load-test goals, by both measures.

One run's ratio against a peer can be read two ways, and on this machine
they disagree by a few percent in most runs (loadtest/README.md "Two
readings of a run, and every run at once"):
  - "medians": the median of goro's rounds over the median of the peer's
    rounds (what the results table prints in its "vs" columns);
  - "per round": the median of the per-round ratios, each round of goro
    paired with the peer's round of the same index (the lines under each
    table).
This script reads every `loadtest/results/http-*.json` that ran goro, Go,
nginx and the floor through the plaintext, pipelined16 and c1000
scenarios, checks each goal by both, and writes one table: a goal is met
(both measures), split (one of the two), or missed (neither). The tallies
and the pooled figures under it are kept apart by the machine instance a run
came from (its kernel release in the machine line): the same code measured
a ratio to the floor 4-13% apart on the two kinds of instance this project
ran on (docs/DESIGN.md "The machine moves the ratio").

  usage: loadtest/http/summary.py [RESULTS_DIR] [OUTPUT]
  (defaults: loadtest/results, print to stdout; the committed table is
  loadtest/results/summary.md)
"""

import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys

# The goals (the load-test issue's acceptance): (label, scenario, peer,
# metric, comparison, bound). "le": goro/peer <= bound; "ge": >= bound.
GOALS = [
    ("keep-alive CPU/req vs floor", "plaintext", "floor", "cpu_us", "le", 1.10),
    ("keep-alive req/s vs nginx", "plaintext", "nginx", "rps", "ge", 1.00),
    ("pipelined x16 req/s vs floor", "pipelined16", "floor", "rps", "ge", 0.80),
    ("1,000 conns CPU/req vs floor", "c1000", "floor", "cpu_us", "le", 1.10),
    ("1,000 conns p99 vs Go", "c1000", "go", "p99", "le", 1.00),
]
IDLE_BOUND_KIB = 2.0
RECENT = 10  # the tally of the latest runs, at code near the current
NEEDED_SERVERS = ("goro", "go", "nginx", "floor")
NEEDED_SCENARIOS = ("plaintext", "pipelined16", "c1000")


def ratios(goro, peer, metric):
    """(medians, per round) for goro's rounds against the peer's, as bench.py
    reads them: the medians leave out rounds without the figure, the
    per-round ratios the rounds where either side lacks it or has 0 (a round
    that failed). None when nothing is left."""
    gm = [r[metric] for r in goro or [] if r.get(metric) is not None]
    pm = [r[metric] for r in peer or [] if r.get(metric) is not None]
    per = per_round(goro, peer, metric)
    if not gm or not pm or not per or statistics.median(pm) == 0:
        return None
    return statistics.median(gm) / statistics.median(pm), statistics.median(per)


def round_ratios(goro, peer, metric):
    """Each round's goro/peer ratio, rounds paired by index; None where
    either side lacks the round (a run that failed), the figure, or has 0.
    bench.py prints these in place; the judgments use per_round."""
    goro, peer = goro or [], peer or []
    out = []
    for i in range(max(len(goro), len(peer))):
        a = goro[i] if i < len(goro) else {}
        b = peer[i] if i < len(peer) else {}
        out.append(a[metric] / b[metric] if a.get(metric) and b.get(metric) else None)
    return out


def per_round(goro, peer, metric):
    """The rounds' ratios (round_ratios) with the missing ones left out."""
    return [x for x in round_ratios(goro, peer, metric) if x is not None]


# A ratio equal to its bound holds, whatever the last bit of a division.
EPSILON = 1e-9


def holds(value, how, bound):
    return value <= bound + EPSILON if how == "le" else value >= bound - EPSILON


def verdict(pair, how, bound):
    ok = [holds(v, how, bound) for v in pair]
    return "met" if all(ok) else "split" if any(ok) else "missed"


def usable(run):
    rounds = run.get("rounds") or {}
    return all(sc in rounds for sc in NEEDED_SCENARIOS) and all(
        s in rounds[sc] for sc in NEEDED_SCENARIOS for s in NEEDED_SERVERS)


def idle_kib(run, n):
    for e in run.get("idle") or []:
        if e.get("server") == "goro" and e.get("n") == n:
            return e.get("per_conn_kib")
    return None


def machine_kind(run):
    """The kernel release in the run's machine line ("6.18.44-fc-v782"),
    which tells the instances apart; "?" where the line lacks it."""
    m = re.search(r"Linux ([^,;\s]+)", str(run.get("machine", "")))
    return m.group(1) if m else "?"


def judge(run):
    """One row: each goal's two ratios and verdict, the idle figures."""
    row = {"goals": []}
    for label, sc, peer, metric, how, bound in GOALS:
        pair = ratios(run["rounds"][sc]["goro"], run["rounds"][sc][peer], metric)
        row["goals"].append((label, pair, verdict(pair, how, bound) if pair else "n/a"))
    row["idle"] = (idle_kib(run, 5000), idle_kib(run, 10000))
    kib = [v for v in row["idle"] if v is not None]
    row["idle_verdict"] = ("n/a" if len(kib) < 2 else
                           "met" if all(v <= IDLE_BOUND_KIB for v in kib) else "missed")
    verdicts = [g[2] for g in row["goals"]] + [row["idle_verdict"]]
    row["all"] = ("met" if all(v == "met" for v in verdicts) else
                  "missed" if any(v == "missed" for v in verdicts) else
                  "split" if any(v == "split" for v in verdicts) else "n/a")
    return row


def commit_time(root, commit):
    """The commit's time (seconds), or None outside a git checkout or for a
    commit it does not have."""
    try:
        out = subprocess.run(["git", "-C", root, "show", "-s", "--format=%ct", commit],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def load_runs(results_dir):
    runs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "http-*.json"))):
        with open(path) as f:
            run = json.load(f)
        if usable(run):
            runs.append((os.path.basename(path)[len("http-"):-len(".json")], run))
    # In the order of the commits measured (a day's runs have suffixes in
    # no particular order), then by name; by name alone where git cannot
    # say.
    times = {name: commit_time(results_dir, str(run.get("commit", ""))) for name, run in runs}
    if all(v is not None for v in times.values()):
        return sorted(runs, key=lambda r: (times[r[0]], r[0]))
    return sorted(runs, key=lambda r: r[0])


def shown(value, how):
    """Three decimals, rounded away from the goal's side, so that a ratio
    that misses never prints as its bound (0.99998 against >= 1.00 reads
    0.999, 1.1004 against <= 1.10 reads 1.101)."""
    scaled = value * 1000
    return f"{(math.ceil(scaled - EPSILON) if how == 'le' else math.floor(scaled + EPSILON)) / 1000:.3f}"


def fmt_pair(pair, how):
    return "—" if pair is None else f"{shown(pair[0], how)} / {shown(pair[1], how)}"


def render(runs):
    out = ["# Load-test runs against the goals", "",
           "Generated by `loadtest/http/summary.py` from the committed "
           "`loadtest/results/http-*.json` runs of goro, Go, nginx and the floor "
           "(plaintext, pipelined16, c1000). Each cell: goro/peer by the medians / "
           "by the per-round ratios (the median of each round's ratio). A goal is "
           "**met** by both measures, *split* by one, missed by neither. Goals: "
           + "; ".join(f"{label} {'≤' if how == 'le' else '≥'} {bound:.2f}"
                       for label, _, _, _, how, bound in GOALS)
           + f"; idle RSS per connection ≤ {IDLE_BOUND_KIB:.0f} KiB at 5,000 and 10,000.", ""]
    head = (["run", "commit", "machine", "rounds"] + [g[0] for g in GOALS]
            + ["idle KiB 5k/10k", "every goal"])
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "---|" * len(head))
    rows = [(name, run, judge(run)) for name, run in runs]
    for name, run, row in rows:
        n = len(run["rounds"]["c1000"]["goro"])
        # A run with wrk errors or non-2xx answers is marked as its own
        # results file marks it.
        cells = [name + (" (errors)" if run.get("errors") else ""),
                 f"`{str(run.get('commit', '?'))[:7]}`", f"`{machine_kind(run)}`", str(n)]
        for (label, pair, v), goal in zip(row["goals"], GOALS):
            mark = {"met": "**met**", "split": "*split*"}.get(v, v)
            cells.append(f"{fmt_pair(pair, goal[4])} {mark}")
        i5, i10 = row["idle"]
        cells.append("—" if i5 is None or i10 is None else f"{i5:.2f} / {i10:.2f}")
        cells.append({"met": "**met**", "split": "*split*"}.get(row["all"], row["all"]))
        out.append("| " + " | ".join(cells) + " |")
    # By machine instance, the one of the latest run first; each group keeps
    # its runs in order.
    groups = {}
    for row in rows:
        groups.setdefault(machine_kind(row[1]), []).append(row)
    for kind, mine in sorted(groups.items(), key=lambda g: -rows.index(g[1][-1])):
        out += ["", f"## Runs on `{kind}` ({len(mine)})"]
        for title, chosen in ((f"Over all {len(mine)}", mine),
                              (f"Over the last {min(len(mine), RECENT)}", mine[-RECENT:])):
            out += ["", f"{title} (each goal: met by both measures / split / missed):", ""]
            out += tally_lines(chosen)
        recent = [(name, run) for name, run, _ in mine[-RECENT:]]
        out += ["", f"Pooled over the last {len(recent)}: the median of every per-round "
                "ratio of those runs, and the median of the runs' ratios of medians:", ""]
        out += pooled_lines(recent)
    return "\n".join(out) + "\n"


def pooled(runs, sc, peer, metric):
    """(median of all per-round ratios, median of the runs' ratios of
    medians, rounds) over `runs`, failed rounds left out as in ratios()."""
    per, meds = [], []
    for _, run in runs:
        goro, other = run["rounds"][sc]["goro"], run["rounds"][sc][peer]
        pair = ratios(goro, other, metric)
        if pair is None:
            continue
        meds.append(pair[0])
        per += per_round(goro, other, metric)
    if not per:
        return None
    return statistics.median(per), statistics.median(meds), len(per)


def pooled_lines(runs):
    lines = []
    for label, sc, peer, metric, how, bound in GOALS:
        p = pooled(runs, sc, peer, metric)
        if p is None:
            lines.append(f"- {label}: —")
            continue
        lines.append(f"- {label}: {shown(p[0], how)} over {p[2]} rounds "
                     f"({'holds' if holds(p[0], how, bound) else 'misses'}), "
                     f"{shown(p[1], how)} over {len(runs)} runs "
                     f"({'holds' if holds(p[1], how, bound) else 'misses'})")
    return lines


def tally_lines(rows):
    """The counts of each verdict over `rows` (name, run, judge(run))."""
    kinds = ("met", "split", "missed", "n/a")
    tally = {g[0]: dict.fromkeys(kinds, 0) for g in GOALS}
    idle = dict.fromkeys(kinds, 0)
    every = dict.fromkeys(kinds, 0)
    for _, _, row in rows:
        for label, _, v in row["goals"]:
            tally[label][v] += 1
        idle[row["idle_verdict"]] += 1
        every[row["all"]] += 1

    def line(label, t):
        na = f" ({t['n/a']} without the figures)" if t["n/a"] else ""
        return f"- {label}: {t['met']} / {t['split']} / {t['missed']}{na}"

    lines = [line(label, t) for label, t in tally.items()]
    lines.append(line(f"idle RSS per connection ≤ {IDLE_BOUND_KIB:.0f} KiB", idle))
    lines.append(line("every goal at once", every))
    return lines


def write(results_dir, path):
    """The summary of the runs in `results_dir`, written to `path`."""
    with open(path, "w") as f:
        f.write(render(load_runs(results_dir)))


def main():
    results_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "results")
    if len(sys.argv) > 2:
        write(results_dir, sys.argv[2])
    else:
        sys.stdout.write(render(load_runs(results_dir)))


if __name__ == "__main__":
    main()
