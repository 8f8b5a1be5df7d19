#!/usr/bin/env python3
"""Keep-alive plaintext under each of the guest's idle policies (a diagnostic).

In a KVM guest whose idle driver is cpuidle-haltpoll, an idle vCPU polls for
up to guest_halt_poll_ns before it halts. While it polls, a wake-up costs
the waker little; once it has halted, the waker's IPI costs it a trip to
the host. On loopback the waker of an idle server is wrk, whose write runs
the server's receive path, so the window moves what wrk can do per request
when wrk is the bottleneck, and with it every server's requests/s
(docs/DESIGN.md, "Requests/s when wrk is the bottleneck"). The polling runs
in the idle task, so the servers' CPU per request does not include it.

Each round sets every window in --poll-ns in turn (the order rotates) and,
under each, measures every server once (bench.py's measure: one core each,
wrk -t1 on the other, 64 connections); the window the machine had is
written back at the end, on an exception, SIGINT, SIGTERM or SIGHUP as well. It changes a
kernel setting, so it needs root and runs only when asked for: through
loadtest/run.sh --idle-policy (the same build steps as the load tests).

Writes idle-policy-DATE .md and .json under --out: per window, each
server's medians (requests/s, CPU per request, sleeps per request, wrk's
CPU) and the per-round ratios of goro's requests/s to nginx's and the
floor's.
"""
import argparse
import datetime
import json
import os
import signal
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the harness's servers, wrk and /proc readers)

KNOB = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"
DRIVER = "/sys/devices/system/cpu/cpuidle/current_driver"


def write_knob(ns):
    with open(KNOB, "w") as f:
        f.write(str(ns))


def ratio_list(rounds, a, b):
    """Per-round ratios of server a's requests/s to server b's."""
    return [x["rps"] / y["rps"] for x, y in zip(rounds.get(a, []), rounds.get(b, []))
            if x["rps"] and y["rps"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--build", default=os.path.join(bench.ROOT, "build/release"))
    ap.add_argument("--bin-dir", required=True, help="where run.sh put gohello and floor")
    ap.add_argument("--poll-ns", default="0,200000",
                    help="the windows to compare, ns (200000: the kernel's default)")
    ap.add_argument("--servers", default="goro,nginx,floor")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--wrk-core", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(bench.ROOT, "loadtest/results"))
    args = ap.parse_args()
    try:
        windows = [int(x) for x in args.poll_ns.split(",") if x]
    except ValueError:
        windows = []
    if not windows or any(w < 0 or w > 0xFFFFFFFF for w in windows) or len(set(windows)) < len(windows):
        ap.error(f"--poll-ns {args.poll_ns!r}: distinct comma-separated windows in ns "
                 f"(0 to 4294967295) expected")
    servers = [s for s in args.servers.split(",") if s]
    for kind in servers:
        if kind not in bench.SERVERS:
            ap.error(f"unknown server {kind} (known: {', '.join(bench.SERVERS)})")
    pgo_bin = bench.binaries(args.build, args.bin_dir)["goro-pgo"]
    if "goro-pgo" in servers and not os.path.exists(pgo_bin):
        ap.error(f"{pgo_bin} is missing: build it first with bash scripts/pgo.sh")
    if args.rounds < 1 or args.seconds < 1:
        ap.error("--rounds and --seconds must be at least 1")
    driver, before = bench.text_of(DRIVER), bench.text_of(KNOB)
    if driver != "haltpoll" or before is None:
        print(f"idle_policy: needs the cpuidle-haltpoll driver (a KVM guest) and {KNOB}; "
              f"this machine's idle driver is {driver or 'unknown'}", file=sys.stderr)
        return 2
    if not os.access(KNOB, os.W_OK):
        print(f"idle_policy: {KNOB} is not writable (run as root)", file=sys.stderr)
        return 2
    # Said first, so that after a SIGKILL the window can be put back by hand.
    print(f"idle_policy: guest_halt_poll_ns is {before}; it is written back at the end "
          f"(echo {before} > {KNOB} after a kill -9)", flush=True)

    bins = bench.binaries(args.build, args.bin_dir)
    date = datetime.date.today().isoformat()
    res = dict(date=date, commit=bench.commit_line(), machine=bench.machine_line(),
               command="loadtest/run.sh --idle-policy " + " ".join(sys.argv[1:]),
               window_before=int(before), servers=servers, rounds={w: {k: [] for k in servers}
                                                                    for w in windows})
    def interrupted(*_):  # SIGTERM and SIGHUP unwind like Ctrl-C, through the finally below
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    tmp = tempfile.mkdtemp(prefix="goro-idle-policy-")
    try:
        for rnd in range(args.rounds):
            for w in bench.rotated(windows, rnd):
                write_knob(w)
                for kind in bench.rotated(servers, rnd):
                    r = bench.measure(kind, "plaintext", args, bins, tmp)
                    res["rounds"][w][kind].append(r)
                    print(f"round {rnd + 1} poll {w:>7} ns {kind:9} {r['rps']:>11,.0f} req/s "
                          f"cpu {bench.fmt(r['cpu_us'], '.2f')} us/req sleeps/req "
                          f"{bench.fmt(r['sleeps_per_req'], '.3f')} wrk cpu "
                          f"{r['wrk_cpu_pct']:.0f}% errors {r['errors']}", flush=True)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # none cuts the restore short
            signal.signal(sig, signal.SIG_IGN)
        write_knob(before)  # the window the machine had
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        shutil.rmtree(tmp, ignore_errors=True)

    lines = [f"# Keep-alive plaintext under the guest's idle policies, {date}", "",
             f"- commit: `{res['commit']}`", f"- machine: {res['machine']}",
             f"- method: loadtest/http/idle_policy.py; {args.rounds} rounds, each setting "
             f"guest_halt_poll_ns to every window in turn and measuring every server under it "
             f"(bench.py's plaintext scenario: 64 connections, {args.seconds} s after a 1 s "
             f"warm-up, server on core {args.server_core}, wrk -t1 on core {args.wrk_core}); "
             f"medians. The window was {before} ns before the run and is again after it.",
             f"- command: `{res['command']}`", "",
             "| poll window | server | requests/s | CPU µs/req | sleeps/req | wrk CPU "
             "| errors |", "|---|---|---|---|---|---|---|"]
    summary = {}
    for w in windows:
        summary[w] = {}
        for kind in servers:
            rs = res["rounds"][w][kind]
            m = {k: bench.median([r.get(k) for r in rs])
                 for k in ("rps", "cpu_us", "sleeps_per_req", "wrk_cpu_pct")}
            m["errors"] = sum(r["errors"] + r["non2xx"] for r in rs)
            summary[w][kind] = m
            lines.append(f"| {w} ns | {kind} | {bench.fmt(m['rps'], ',.0f')} | "
                         f"{bench.fmt(m['cpu_us'], '.2f')} | {bench.fmt(m['sleeps_per_req'], '.3f')} | "
                         f"{bench.fmt(m['wrk_cpu_pct'], '.0f')}% | {m['errors']} |")
    lines += ["", "Per-round ratios of goro's requests/s, each build (medians; the rounds' "
              "ratios sorted):", ""]
    for w in windows:
        for name in bench.GORO_BUILDS:
            for peer in ("nginx", "floor"):
                if name in servers and peer in servers:
                    rl = ratio_list(res["rounds"][w], name, peer)
                    summary[w][f"{name}_vs_{peer}"] = bench.median(rl)
                    lines.append(f"- {w} ns, {name} / {peer}: {bench.fmt(bench.median(rl), '.3f')} "
                                 f"({', '.join(f'{x:.2f}' for x in sorted(rl))})")
    res["median"] = summary
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"idle-policy-{date}")
    n = 1
    while os.path.exists(base + ".md"):  # a second run that day keeps the first
        n += 1
        base = os.path.join(args.out, f"idle-policy-{date}-{n}")
    with open(base + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(base + ".json", "w") as f:
        json.dump(res, f, indent=1, default=str)
    print("\n".join(lines[7:]))
    print(f"wrote {base}.md, .json")
    errors = any(summary[w][kind]["errors"] for w in windows for kind in servers)
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print(f"idle_policy: interrupted; guest_halt_poll_ns is {bench.text_of(KNOB)} again",
              file=sys.stderr)
        sys.exit(130)
