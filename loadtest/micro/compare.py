#!/usr/bin/env python3
"""Side-by-side runner for goro-microbench and its Go peer gomicro.

Normally started by scripts/bench-micro.sh, which builds both binaries first.
For every benchmark case (a benchmark at a P count) it runs goro and Go
alternately for R rounds -- goro first on even rounds, Go first on odd ones, so
neither side always gets the warmer machine -- takes the median of each side,
and prints one table row per figure with the goro/Go ratio, the target from the
issue tracker and PASS/FAIL. docs/benchmarks.md explains every row.

Each case is pinned with taskset to the first `procs` CPUs this process may
run on (procs=1 cases to one CPU, so the runtime's helper threads -- Go's
sysmon, goro's sysmon -- compete with the Ps exactly as they would on a
one-core container); --no-pin turns that off.

Exit status: 0 when no row FAILs, 1 when one does, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

# A case is one benchmark run at one P count; rows are computed from cases.
CASES = [
    ("yield", 1),
    ("spawn", 2),
    ("spawn", 1),
    ("skynet", 2),
    ("fanout", 1),
    ("fanout", 2),
    ("parkmem", 2),
    ("pingpong", 2),
    ("pingpong", 1),
    ("bufchan", 2),
    ("mutex", 2),
    ("select2", 1),
    ("getppid", 1),
]


@dataclass
class Row:
    """One table row. kind:
    ratio_le  goro/Go of a lower-is-better figure must be <= target
    ratio_ge  goro/Go of a higher-is-better figure must be >= target
    abs_le    goro's own figure must be <= target (Go shown for scale)
    speedup   goro's fanout 1P/2P speedup must be >= target
    info      no target
    """

    label: str
    bench: str
    procs: int
    kind: str
    target: float | None = None


ROWS = [
    Row("yield switch (1P)", "yield", 1, "ratio_le", 0.3),
    Row("spawn+complete (2P)", "spawn", 2, "ratio_le", 0.5),
    Row("spawn+complete (1P)", "spawn", 1, "info"),
    Row("skynet 1M (2P)", "skynet", 2, "ratio_le", 0.5),
    Row("fanout 10k uneven (1P)", "fanout", 1, "info"),
    Row("fanout 10k uneven (2P)", "fanout", 2, "info"),
    Row("fanout speedup 2P vs 1P", "fanout", 0, "speedup", 1.8),
    Row("parked goroutine RSS", "parkmem", 2, "abs_le", 4.5 * 1024),
    Row("chan ping-pong (2P)", "pingpong", 2, "ratio_le", 0.5),
    Row("chan ping-pong (1P)", "pingpong", 1, "ratio_le", 0.5),
    Row("buffered chan 1024 (2P)", "bufchan", 2, "ratio_ge", 1.0),
    Row("mutex, 8 goroutines (2P)", "mutex", 2, "ratio_ge", 1.0),
    Row("select, 2 ready chans (1P)", "select2", 1, "info"),
    Row("getppid syscall (1P)", "getppid", 1, "ratio_le", 2.0),
]


@dataclass
class Sample:
    value: float | None = None
    unit: str = ""
    fields: dict = field(default_factory=dict)
    status: str = "ok"  # ok | not_built | error | timeout
    message: str = ""


def parse_line(text: str) -> dict:
    """Parses the benchmark's last key=value line."""
    lines = [ln for ln in text.strip().splitlines() if ln.startswith("bench=")]
    if not lines:
        return {}
    out = {}
    for tok in lines[-1].split():
        key, _, val = tok.partition("=")
        out[key] = val
    return out


def run_once(binary: str, bench: str, procs: int, n: int | None, cpus: list[int] | None,
             timeout: float, verbose: bool) -> Sample:
    cmd = [binary, "--bench", bench, "--procs", str(procs)]
    if n:
        cmd += ["--n", str(n)]
    if cpus:
        cmd = ["taskset", "-c", ",".join(map(str, cpus))] + cmd
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Sample(status="timeout", message=f"{' '.join(cmd)}: no result in {timeout:.0f} s")
    fields = parse_line(proc.stdout)
    if verbose:
        sys.stderr.write(f"  $ {' '.join(cmd)}\n    {proc.stdout.strip()}\n")
    if proc.returncode == 3 or fields.get("status") == "not_built":
        return Sample(status="not_built", fields=fields, message=proc.stderr.strip())
    if proc.returncode != 0 or "value" not in fields:
        msg = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
        return Sample(status="error", fields=fields,
                      message=f"exit {proc.returncode}: {msg[-1] if msg else ''}")
    return Sample(value=float(fields["value"]), unit=fields.get("unit", ""), fields=fields)


@dataclass
class CaseResult:
    bench: str
    procs: int
    samples: dict  # impl -> list[Sample]

    def ok(self, impl: str) -> list[Sample]:
        return [s for s in self.samples[impl] if s.status == "ok"]

    def median(self, impl: str) -> float | None:
        vals = [s.value for s in self.ok(impl)]
        return statistics.median(vals) if vals else None

    def status(self, impl: str) -> str:
        """ok if at least one round succeeded, else the first failure's status."""
        if self.ok(impl):
            return "ok"
        return self.samples[impl][0].status if self.samples[impl] else "missing"

    def message(self, impl: str) -> str:
        for s in self.samples[impl]:
            if s.status != "ok":
                return s.message
        return ""

    def fields(self, impl: str) -> dict:
        ok = self.ok(impl)
        return ok[-1].fields if ok else {}

    def unit(self, impl: str) -> str:
        ok = self.ok(impl)
        return ok[0].unit if ok else ""


def pick_cpus(procs: int, pin: bool) -> list[int] | None:
    if not pin or not shutil.which("taskset"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < procs:
        return None
    return allowed[:procs]


def run_cases(args, cases) -> dict:
    results = {}
    impls = [("goro", args.goro), ("go", args.go)]
    for bench, procs in cases:
        cpus = pick_cpus(procs, not args.no_pin)
        where = f"cpus {','.join(map(str, cpus))}" if cpus else "unpinned"
        sys.stderr.write(f"{bench} procs={procs} ({where}): ")
        sys.stderr.flush()
        cr = CaseResult(bench, procs, {"goro": [], "go": []})
        for rnd in range(args.rounds):
            order = impls if rnd % 2 == 0 else list(reversed(impls))
            for impl, binary in order:
                if binary is None:
                    cr.samples[impl].append(Sample(status="not_built", message="binary missing"))
                    continue
                # A benchmark that is not built stays not built: ask once.
                prev = cr.samples[impl]
                if prev and prev[0].status == "not_built":
                    continue
                s = run_once(binary, bench, procs, args.n.get(bench), cpus, args.timeout,
                             args.verbose)
                prev.append(s)
            sys.stderr.write(".")
            sys.stderr.flush()
        sys.stderr.write("\n")
        results[(bench, procs)] = cr
    return results


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ops/s":
        return f"{v / 1e6:.2f} Mops/s"
    if unit == "B/goroutine":
        return f"{v / 1024:.2f} KiB"
    if unit == "ms":
        return f"{v:.1f} ms"
    if unit == "ns/op":
        return f"{v:.1f} ns"
    if unit == "x":
        return f"{v:.2f}x"
    return f"{v:.4g} {unit}"


def speedups(results, impl) -> float | None:
    """Median over rounds of t(1P)/t(2P), pairing rounds by index."""
    one, two = results.get(("fanout", 1)), results.get(("fanout", 2))
    if not one or not two:
        return None
    a = [s.value for s in one.ok(impl)]
    b = [s.value for s in two.ok(impl)]
    pairs = [x / y for x, y in zip(a, b) if y > 0]
    return statistics.median(pairs) if pairs else None


def evaluate(results) -> list[dict]:
    rows = []
    for row in ROWS:
        rec = {"row": row.label, "bench": row.bench, "procs": row.procs, "kind": row.kind,
               "target": row.target, "goro": None, "go": None, "ratio": None, "unit": "",
               "verdict": "-", "notes": [], "goro_status": "ok", "go_status": "ok"}
        if row.kind == "speedup":
            rec["unit"] = "x"
            rec["goro"], rec["go"] = speedups(results, "goro"), speedups(results, "go")
            for impl in ("goro", "go"):
                if rec[impl] is None:
                    one = results.get(("fanout", 1))
                    status = one.status(impl) if one else "missing"
                    rec[f"{impl}_status"] = status if status != "ok" else "missing"
            if rec["goro"] is not None and rec["go"]:
                rec["ratio"] = rec["goro"] / rec["go"]
            if rec["goro"] is not None:
                rec["verdict"] = "PASS" if rec["goro"] >= row.target else "FAIL"
            rows.append(rec)
            continue
        cr = results.get((row.bench, row.procs))
        if cr is None:
            continue
        rec["goro"], rec["go"] = cr.median("goro"), cr.median("go")
        rec["unit"] = cr.unit("go") or cr.unit("goro")
        rec["goro_status"], rec["go_status"] = cr.status("goro"), cr.status("go")
        rec["goro_rounds"] = [s.value for s in cr.ok("goro")]
        rec["go_rounds"] = [s.value for s in cr.ok("go")]
        gf = cr.fields("goro")
        rec["goro_variant"] = gf.get("variant", "")
        for impl in ("goro", "go"):
            if rec[f"{impl}_status"] != "ok":
                rec["notes"].append(f"{impl}: {rec[f'{impl}_status']}: {cr.message(impl)}")
        if rec["goro"] is not None and rec["go"]:
            rec["ratio"] = rec["goro"] / rec["go"]
        if row.kind == "info" or rec["goro"] is None:
            rec["verdict"] = "-" if rec["goro_status"] == "ok" else "skip"
        elif row.kind == "abs_le":
            rec["verdict"] = "PASS" if rec["goro"] <= row.target else "FAIL"
        elif rec["ratio"] is None:
            rec["verdict"] = "-"
        elif row.kind == "ratio_le":
            rec["verdict"] = "PASS" if rec["ratio"] <= row.target else "FAIL"
        elif row.kind == "ratio_ge":
            rec["verdict"] = "PASS" if rec["ratio"] >= row.target else "FAIL"
        rows.append(rec)
    return rows


def target_text(row: dict) -> str:
    t, kind = row["target"], row["kind"]
    if kind == "ratio_le":
        return f"ratio <= {t:g}"
    if kind == "ratio_ge":
        return f"ratio >= {t:g}"
    if kind == "abs_le":
        return f"goro <= {fmt_value(t, row['unit'])}"
    if kind == "speedup":
        return f"goro >= {t:g}x"
    return ""


def print_table(rows, rounds: int, overrides: dict) -> None:
    header = ["benchmark", "goro", "Go", "goro/Go", "target", "result"]
    table = []
    for r in rows:
        if r["goro"] is not None:
            goro = fmt_value(r["goro"], r["unit"])
        else:
            goro = r["goro_status"].replace("_", " ")
        go = fmt_value(r["go"], r["unit"]) if r["go"] is not None else r["go_status"]
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        table.append([r["row"], goro, go, ratio, target_text(r), r["verdict"]])
    widths = [max(len(str(x[i])) for x in table + [header]) for i in range(len(header))]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |"
    print(line)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for t in table:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(t, widths)) + " |")
    print(f"\nmedians of {rounds} alternating rounds. goro/Go: below 1 means goro is faster "
          "on time and memory rows, above 1 on the ops/s rows (bufchan, mutex).")
    if overrides:
        print("iteration counts overridden: " +
              ", ".join(f"{k}={v}" for k, v in sorted(overrides.items())))
    for r in rows:
        for note in r["notes"]:
            if "not_built" not in note:
                print(f"! {r['row']}: {note}")


def machine_info(args) -> dict:
    def out(cmd):
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "kernel": platform.release(),
        "cpus_allowed": len(os.sched_getaffinity(0)),
        "cpu_model": next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                           if ln.startswith("model name")), ""),
        "go_version": out(["go", "version"]),
        "git_rev": out(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                        "rev-parse", "--short", "HEAD"]),
        "rounds": args.rounds,
        "pinned": not args.no_pin,
        "n_overrides": args.n,
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--goro", help="path to goro-microbench (omit: goro column 'not built')")
    p.add_argument("--go", required=True, help="path to gomicro")
    p.add_argument("--rounds", type=int, default=5, help="alternating rounds per case (default 5)")
    p.add_argument("--only", default="", help="comma-separated benchmark names to run")
    p.add_argument("--n", action="append", default=[], metavar="BENCH=N",
                   help="override a benchmark's iteration count (repeatable)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-': stdout)")
    p.add_argument("--no-pin", action="store_true", help="do not pin runs with taskset")
    p.add_argument("--timeout", type=float, default=120, help="seconds per run (default 120)")
    p.add_argument("--verbose", action="store_true", help="echo every command and result line")
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error("--rounds must be >= 1")
    overrides = {}
    for item in args.n:
        bench, _, num = item.partition("=")
        if not num.isdigit():
            p.error(f"--n wants BENCH=N, got {item!r}")
        overrides[bench] = int(num)
    args.n = overrides
    if args.goro and not os.access(args.goro, os.X_OK):
        sys.stderr.write(f"warning: {args.goro} is not executable; goro column 'not built'\n")
        args.goro = None
    return args


def main(argv) -> int:
    args = parse_args(argv)
    only = {b for b in args.only.split(",") if b}
    cases = [c for c in CASES if not only or c[0] in only]
    if not cases:
        sys.stderr.write("no benchmark selected\n")
        return 2
    load_before = os.getloadavg()
    results = run_cases(args, cases)
    load_after = os.getloadavg()
    rows = evaluate(results)
    if args.json != "-":
        print_table(rows, args.rounds, args.n)
        print(f"load average (1 min) before/after: {load_before[0]:.2f} / {load_after[0]:.2f}"
              f" on {len(os.sched_getaffinity(0))} CPUs")
        if load_before[0] > 0.5:
            print("! the machine was busy before the run: 2-P rows (fanout speedup above all)"
                  " are not trustworthy; rerun on an idle machine")
    if args.json:
        doc = {"machine": machine_info(args), "rows": rows,
               "loadavg_before": load_before, "loadavg_after": load_after}
        if args.json == "-":
            json.dump(doc, sys.stdout, indent=2)
            print()
        else:
            with open(args.json, "w") as f:
                json.dump(doc, f, indent=2)
    return 1 if any(r["verdict"] == "FAIL" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
