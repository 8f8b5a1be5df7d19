#!/usr/bin/env python3
"""HTTP load tests: goro-hello against Go net/http, nginx and a C floor.

Run through loadtest/run.sh, which builds everything first. Each server is
pinned to one core (--server-core) with one P / GOMAXPROCS=1 / one nginx
worker, wrk to another (--wrk-core). Rounds alternate between the servers
(the order rotates each round) so that a drift in the machine's speed hits
all of them alike; the tables quote medians over the rounds.

Per scenario and server it records requests/s, p50 and p99 latency (wrk
--latency), wrk's socket errors and non-2xx responses, and the server's CPU
time per request (utime + stime of the server's processes from /proc,
before and after the wrk run, divided by the requests wrk completed). CPU
per request moves much less with the machine's noise than requests/s, and
is quoted as a ratio to the floor's.

Idle memory: a client opens N keep-alive connections, sends one request on
each, reads the answer and holds them; the server's RSS (all its processes)
after, less its RSS before, over N.

Instructions per request (--callgrind): goro-hello and the floor run under
valgrind --tool=callgrind while one client sends N1, then N2 requests over
one keep-alive connection; (Ir(N2) - Ir(N1)) / (N2 - N1) is the user-space
instruction count per request, a figure that does not move with the load of
the machine.

Writes into loadtest/results/ http-DATE .md (tables), .json and
png (matplotlib).
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVERS = ["goro", "go", "nginx", "floor"]
SCENARIOS = {
    "plaintext": dict(path="/plaintext", conns=64),
    "pipelined16": dict(path="/plaintext", conns=64, pipeline=16),
    "json": dict(path="/json", conns=64),
    "c1000": dict(path="/plaintext", conns=1000),
    "close": dict(path="/plaintext", conns=64, close=True),
}
CLK_TCK = os.sysconf("SC_CLK_TCK")


def tree(pid):
    """pid and its descendants (nginx: master and worker)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def cpu_seconds(pid):
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except OSError:
            pass
    return total / CLK_TCK


def rss_kib(pid):
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(addr, proc, timeout=10.0):
    host, port = addr.rsplit(":", 1)
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {addr}")


class Server:
    def __init__(self, kind, bins, core, tmp, json_body=False, close=False, max_conns=None):
        self.kind = kind
        pin = ["taskset", "-c", str(core)]
        env = dict(os.environ)
        if kind == "goro":
            cmd = [bins["goro"], "--addr", "127.0.0.1:0", "--maxprocs", "1"]
            if max_conns:
                cmd += ["--max_connections", str(max_conns)]
        elif kind == "go":
            cmd = [bins["go"], "-addr", "127.0.0.1:0"]
            env["GOMAXPROCS"] = "1"
        elif kind == "floor":
            cmd = [bins["floor"], "json" if json_body else "plain", "close" if close else "keep"]
        else:
            port = free_port()
            d = tempfile.mkdtemp(dir=tmp)
            with open(os.path.join(ROOT, "loadtest/peers/nginx/nginx.conf.in")) as f:
                conf = f.read().replace("@PORT@", str(port)).replace("@DIR@", d)
            path = os.path.join(d, "nginx.conf")
            with open(path, "w") as f:
                f.write(conf)
            cmd = [bins["nginx"], "-c", path, "-p", d, "-e", os.path.join(d, "error.log")]
            self.addr = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(pin + cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True)
        if kind != "nginx":
            self.addr = self.proc.stdout.readline().strip()
        wait_listening(self.addr, self.proc)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM if self.kind != "nginx" else signal.SIGQUIT)
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_wrk(addr, sc, secs, core):
    cmd = ["taskset", "-c", str(core), "wrk", "-t1", f"-c{sc['conns']}", f"-d{secs}s", "--latency"]
    if sc.get("close"):
        cmd += ["-H", "Connection: close"]
    if sc.get("pipeline"):
        cmd += ["-s", os.path.join(ROOT, "loadtest/http/pipeline.lua")]
    cmd.append(f"http://{addr}{sc['path']}")
    if sc.get("pipeline"):
        cmd += ["--", str(sc["pipeline"]), sc["path"]]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 60).stdout
    return parse_wrk(out)


def to_ms(v):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", v)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[m.group(2)]
    return float(m.group(1)) * scale


def parse_wrk(out):
    r = dict(rps=0.0, requests=0, p50=None, p99=None, errors=0, non2xx=0)
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        r["rps"] = float(m.group(1))
    m = re.search(r"(\d+) requests in", out)
    if m:
        r["requests"] = int(m.group(1))
    for pct, key in (("50", "p50"), ("99", "p99")):
        m = re.search(rf"^\s+{pct}(?:\.000)?%\s+(\S+)", out, re.M)
        if m:
            r[key] = to_ms(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    if m:
        r["errors"] = sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if m:
        r["non2xx"] = int(m.group(1))
    if r["requests"] == 0:
        r["raw"] = out[-2000:]
    return r


def measure(kind, sc_name, args, bins, tmp):
    sc = SCENARIOS[sc_name]
    srv = Server(kind, bins, args.server_core, tmp, json_body=sc["path"] == "/json",
                 close=bool(sc.get("close")))
    try:
        run_wrk(srv.addr, sc, 1, args.wrk_core)  # warm-up
        before = cpu_seconds(srv.proc.pid)
        r = run_wrk(srv.addr, sc, args.seconds, args.wrk_core)
        cpu = cpu_seconds(srv.proc.pid) - before
    finally:
        srv.stop()
    r["cpu_us"] = cpu / r["requests"] * 1e6 if r["requests"] else None
    return r


def hold_idle(addr, n):
    host, port = addr.rsplit(":", 1)
    socks = []
    req = b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        s.sendall(req)
        got = b""
        while not got.endswith(b"Hello, World!"):
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("server closed an idle-test connection")
            got += chunk
        socks.append(s)
    return socks


def idle_memory(kind, n, args, bins, tmp):
    srv = Server(kind, bins, args.server_core, tmp, max_conns=2 * n)
    try:
        for s in hold_idle(srv.addr, 1):  # warm: one request served
            s.close()
        time.sleep(0.5)
        before = rss_kib(srv.proc.pid)
        socks = hold_idle(srv.addr, n)
        time.sleep(1.0)
        after = rss_kib(srv.proc.pid)
        for s in socks:
            s.close()
    finally:
        srv.stop()
    return dict(before_kib=before, after_kib=after, per_conn_kib=(after - before) / n)


def callgrind_ir(kind, n, bins, tmp):
    out = os.path.join(tmp, f"cg-{kind}-{n}.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if kind == "goro":
        cmd += [bins["goro"], "--addr", "127.0.0.1:0", "--maxprocs", "1"]
    else:
        cmd += [bins["floor"], "plain", "keep"]
    # Valgrind 3.19 itself crashes when sysmon's preemption signal lands on a
    # goroutine stack under it; a single-connection client never needs it.
    env = dict(os.environ, GORO_DEBUG="asyncpreemptoff=1")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env=env)
    addr = proc.stdout.readline().strip()
    wait_listening(addr, proc, timeout=60)
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=60) as s:
        req = b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"
        for _ in range(n):
            s.sendall(req)
            got = b""
            while not got.endswith(b"Hello, World!"):
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError(f"{kind} under valgrind closed the connection")
                got += chunk
    proc.send_signal(signal.SIGTERM if kind == "goro" else signal.SIGINT)
    try:
        proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    total = 0
    with open(out) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                total = max(total, int(line.split()[1]))
    return total


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def machine_line():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    def version(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
            return (p.stdout + p.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"
    return (f"{os.cpu_count()} cores ({model}), Linux {platform.release()}; "
            f"{version(['go', 'version'])}; {version(['nginx', '-v'])}; "
            f"{version(['wrk', '--version'])}")


def commit_line():
    def git(*a):
        return subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True,
                              text=True).stdout.strip()
    dirty = " (with uncommitted changes)" if git("status", "--porcelain", "--untracked-files=no") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def fmt(v, spec):
    return "—" if v is None else format(v, spec)


def write_results(res, args, out_base):
    lines = [f"# HTTP load test, {res['date']}", "",
             f"- commit: `{res['commit']}`", f"- machine: {res['machine']}",
             f"- method: each server pinned to core {args.server_core} (one P, GOMAXPROCS=1, "
             f"one nginx worker, the floor is single-threaded), wrk -t1 pinned to core "
             f"{args.wrk_core}; {args.rounds} alternating rounds of {args.seconds} s after a 1 s "
             f"warm-up; medians. CPU/req: the server's utime+stime over the run / requests.",
             f"- command: `{res['command']}`", ""]
    if res["errors"]:
        lines += ["**This run had errors** (wrk socket errors or non-2xx); see the errors column.",
                  ""]
    for sc in res["scenarios"]:
        s = SCENARIOS[sc]
        desc = f"{s['conns']} connections" + (f", pipelined x{s['pipeline']}" if s.get("pipeline") else "") + \
            (", Connection: close" if s.get("close") else "") + f", GET {s['path']}"
        lines += [f"## {sc} ({desc})", "",
                  "| server | requests/s | p50 ms | p99 ms | CPU µs/req | CPU vs floor | rps vs nginx | errors | non-2xx |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        floor_cpu = res["median"][sc].get("floor", {}).get("cpu_us")
        nginx_rps = res["median"][sc].get("nginx", {}).get("rps")
        for kind in SERVERS:
            m = res["median"][sc].get(kind)
            if not m:
                continue
            ratio = m["cpu_us"] / floor_cpu if m["cpu_us"] and floor_cpu else None
            vs_nginx = m["rps"] / nginx_rps if m["rps"] and nginx_rps else None
            lines.append(f"| {kind} | {fmt(m['rps'], ',.0f')} | {fmt(m['p50'], '.2f')} | "
                         f"{fmt(m['p99'], '.2f')} | {fmt(m['cpu_us'], '.2f')} | {fmt(ratio, '.2f')}x | "
                         f"{fmt(vs_nginx, '.2f')}x | {m['errors']} | {m['non2xx']} |")
        lines.append("")
    if res.get("idle"):
        lines += ["## Idle keep-alive connections (RSS per connection)", "",
                  "| server | connections | RSS before KiB | RSS after KiB | KiB per connection |",
                  "|---|---:|---:|---:|---:|"]
        for row in res["idle"]:
            lines.append(f"| {row['server']} | {row['n']} | {row['before_kib']} | {row['after_kib']} | "
                         f"{row['per_conn_kib']:.2f} |")
        lines.append("")
    if res.get("callgrind"):
        lines += ["## Instructions per keep-alive request (callgrind, user space)", ""]
        for kind, v in res["callgrind"].items():
            lines.append(f"- {kind}: {v['per_request']:,.0f} instructions/request "
                         f"(Ir {v['ir_n1']:,} at {v['n1']} requests, {v['ir_n2']:,} at {v['n2']})")
        lines.append("")
    with open(out_base + ".md", "w") as f:
        f.write("\n".join(lines))
    with open(out_base + ".json", "w") as f:
        json.dump(res, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no chart", file=sys.stderr)
        return
    scs = res["scenarios"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    width = 0.2
    for i, kind in enumerate(SERVERS):
        rps = [(res["median"][sc].get(kind) or {}).get("rps") or 0 for sc in scs]
        cpu = [(res["median"][sc].get(kind) or {}).get("cpu_us") or 0 for sc in scs]
        xs = [j + (i - 1.5) * width for j in range(len(scs))]
        axes[0].bar(xs, [r / 1000 for r in rps], width, label=kind)
        axes[1].bar(xs, cpu, width, label=kind)
    for ax, title in ((axes[0], "thousand requests/s (higher is better)"),
                      (axes[1], "server CPU µs per request (lower is better)")):
        ax.set_xticks(range(len(scs)))
        ax.set_xticklabels(scs)
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"goro-hello vs Go net/http, nginx and the floor, one core each "
                 f"({res['date']}, {res['commit']})")
    fig.tight_layout()
    fig.savefig(out_base + ".png", dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    ap.add_argument("--bin-dir", required=True, help="where run.sh put gohello and floor")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--servers", default=",".join(SERVERS))
    ap.add_argument("--idle", default="5000,10000", help="idle connection counts ('' for none)")
    ap.add_argument("--callgrind", default="2000,12000", help="N1,N2 ('' to skip)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--wrk-core", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "loadtest/results"))
    args = ap.parse_args()

    bins = dict(goro=os.path.join(args.build, "bin/goro-hello"),
                go=os.path.join(args.bin_dir, "gohello"),
                floor=os.path.join(args.bin_dir, "floor"),
                nginx=shutil.which("nginx") or "/usr/sbin/nginx")
    servers = [s for s in args.servers.split(",") if s]
    scenarios = [s for s in args.scenarios.split(",") if s]
    date = datetime.date.today().isoformat()
    res = dict(date=date, commit=commit_line(), machine=machine_line(),
               command="loadtest/run.sh " + " ".join(sys.argv[1:]),
               scenarios=scenarios, rounds={}, median={}, errors=False)
    tmp = tempfile.mkdtemp(prefix="goro-bench-")
    try:
        for sc in scenarios:
            res["rounds"][sc] = {k: [] for k in servers}
        for rnd in range(args.rounds):
            order = servers[rnd % len(servers):] + servers[:rnd % len(servers)]
            for sc in scenarios:
                for kind in order:
                    r = measure(kind, sc, args, bins, tmp)
                    res["rounds"][sc][kind].append(r)
                    print(f"round {rnd + 1} {sc:12} {kind:6} {r['rps']:>11,.0f} req/s "
                          f"p99 {fmt(r['p99'], '.2f')} ms cpu {fmt(r['cpu_us'], '.2f')} us/req "
                          f"errors {r['errors']} non2xx {r['non2xx']}", flush=True)
        for sc in scenarios:
            res["median"][sc] = {}
            for kind in servers:
                rs = res["rounds"][sc][kind]
                m = {k: median([r[k] for r in rs]) for k in ("rps", "p50", "p99", "cpu_us")}
                m["errors"] = sum(r["errors"] for r in rs)
                m["non2xx"] = sum(r["non2xx"] for r in rs)
                res["errors"] |= m["errors"] > 0 or m["non2xx"] > 0
                res["median"][sc][kind] = m
        res["idle"] = []
        for n in [int(x) for x in args.idle.split(",") if x]:
            for kind in servers:
                row = idle_memory(kind, n, args, bins, tmp)
                row.update(server=kind, n=n)
                res["idle"].append(row)
                print(f"idle {n} {kind:6} {row['per_conn_kib']:.2f} KiB/conn", flush=True)
        if args.callgrind and shutil.which("valgrind"):
            n1, n2 = [int(x) for x in args.callgrind.split(",")]
            res["callgrind"] = {}
            for kind in ("goro", "floor"):
                a, b = callgrind_ir(kind, n1, bins, tmp), callgrind_ir(kind, n2, bins, tmp)
                res["callgrind"][kind] = dict(n1=n1, n2=n2, ir_n1=a, ir_n2=b,
                                              per_request=(b - a) / (n2 - n1))
                print(f"callgrind {kind}: {(b - a) / (n2 - n1):,.0f} instructions/request", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"http-{date}")
    write_results(res, args, base)
    print(f"wrote {base}.md, .json, .png")
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
