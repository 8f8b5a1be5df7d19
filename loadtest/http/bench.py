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

HTTPS (https, https-handshake): goro, goro-pgo, Go and nginx serve one
certificate (ECDSA P-256, SAN DNS:localhost and IP:127.0.0.1) that the harness makes
with the openssl CLI in the run's temporary directory; the floor does not
speak TLS (n/a). wrk runs with the shim built from loadtest/http/wrk_tls.c
preloaded (built by run.sh), which counts wrk's full and resumed handshakes and, in
https-handshake, drops the session wrk would otherwise offer again on each
Connection: close reconnect (wrk reuses one SSL object per connection slot
and SSL_clear keeps its session), so that every request pays a full
handshake. goro's own /metrics count (full/resumed/failed) over the measured
run is recorded beside it. These tables quote requests/s and CPU per request
as ratios to Go's, with the per-round goro/Go ratios.

goro-pgo is the same goro-hello built with profile-guided optimization
(scripts/pgo.sh, which run.sh runs: GCC trained on these loads, see
docs/DESIGN.md "Profile-guided optimization"); goro is the release preset's
build, the one the README's commands build. Both are in every table but
the idle ones; the plain-HTTP tables add per-round goro-pgo/goro ratios of
CPU and user time.

--servers may add goro-held, goro-hello with release_when_drained off (a
connection keeps its goroutine through the first idle_release_after of its
rest): the rows then show what the default costs or saves in the same run.

Idle memory: a client opens N keep-alive connections, sends one request on
each, reads the answer and holds them; the server's RSS (all its processes)
4 s after the last one (at rest: goro has released their goroutines), less
its RSS before, over N. With goro among the servers, also goro-kept:
goro-hello with --idle_release_after 0, whose connections keep their
goroutines (what a connection holds in the first second of its rest, or
always when the release is off). Idle TLS memory (--idle-tls): the same
over TLS (Python's ssl module, one full handshake each), goro, Go and nginx:
the RSS per idle TLS connection. goro-pgo is left out of both: its
connections hold the same memory as goro's (the code differs, not the
data; the two builds measured 1.05 and 1.00 KiB each in
loadtest/results/http-2026-11-28-s22a.md).

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
import resource
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summary  # noqa: E402 (beside this script: the goals' judge and the per-round rule)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVERS = ["goro", "goro-pgo", "go", "nginx", "floor"]
# The two builds of goro-hello, as they appear in the per-round ratios.
GORO_BUILDS = ("goro", "goro-pgo")
# On request only (--servers): goro-hello with release_when_drained off, so
# one run shows what the default's release at once costs or saves.
EXTRA_SERVERS = ["goro-held"]
SCENARIOS = {
    "plaintext": dict(path="/plaintext", conns=64),
    "pipelined16": dict(path="/plaintext", conns=64, pipeline=16),
    "json": dict(path="/json", conns=64),
    "c1000": dict(path="/plaintext", conns=1000),
    "close": dict(path="/plaintext", conns=64, close=True),
    # HTTPS: target_vs_go is the acceptance for goro's requests/s over Go's.
    "https": dict(path="/plaintext", conns=64, tls=True, target_vs_go=1.5),
    "https-handshake": dict(path="/plaintext", conns=64, close=True, tls=True,
                            full_handshake=True, target_vs_go=1.0),
}
TLS_SERVERS = ("goro", "goro-pgo", "go", "nginx")  # the floor does not speak TLS
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
    """(user, kernel) CPU seconds of the server's processes so far."""
    user = sys_ = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])  # utime
            sys_ += int(fields[12])  # stime
        except OSError:
            pass
    return user / CLK_TCK, sys_ / CLK_TCK


def text_of(path):
    """A small file's text, stripped (a sysfs setting); None if it is absent."""
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def status_field(path, key):
    """The number on a /proc status file's `key` line (0 if gone or absent)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def sleeps(pid):
    """Voluntary context switches of every thread of the server's processes
    so far: each is a sleep (in epoll_wait, mostly) that the client's next
    write has to wake, and on loopback the waker pays for the wake-up."""
    total = 0
    for p in tree(pid):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        total += sum(status_field(f"/proc/{p}/task/{t}/status", "voluntary_ctxt_switches:")
                     for t in tasks)
    return total


def rss_kib(pid):
    return sum(status_field(f"/proc/{p}/status", "VmRSS:") for p in tree(pid))


def make_cert(tmp):
    """The run's certificate: ECDSA P-256, self-signed, for localhost and 127.0.0.1."""
    d = os.path.join(tmp, "tls")
    os.makedirs(d)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "7", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, capture_output=True)
    return dict(cert=cert, key=key)


def client_context(tls):
    """A client that checks the run's certificate and offers no session."""
    ctx = ssl.create_default_context(cafile=tls["cert"])
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx


def open_fds(pid):
    total = 0
    for p in tree(pid):
        try:
            total += len(os.listdir(f"/proc/{p}/fd"))
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
    def __init__(self, kind, bins, core, tmp, json_body=False, close=False, max_conns=None,
                 tls=None):
        self.kind = kind
        if tls and kind not in TLS_SERVERS:
            raise ValueError(f"{kind} does not speak TLS")
        pin = ["taskset", "-c", str(core)]
        env = dict(os.environ)
        if kind in ("goro", "goro-pgo", "goro-kept", "goro-held"):
            cmd = [goro_binary(bins, kind), "--addr", "127.0.0.1:0", "--maxprocs", "1"]
            if kind == "goro-kept":  # idle memory only: connections keep their goroutines
                cmd += ["--idle_release_after", "0"]
            if kind == "goro-held":  # a connection keeps its goroutine for idle_release_after
                cmd += ["--release_when_drained=false"]
            if max_conns:
                cmd += ["--max_connections", str(max_conns)]
            if tls:
                cmd += ["--tls_cert", tls["cert"], "--tls_key", tls["key"]]
        elif kind == "go":
            cmd = [bins["go"], "-addr", "127.0.0.1:0"]
            if tls:
                cmd += ["-tls-cert", tls["cert"], "-tls-key", tls["key"]]
            env["GOMAXPROCS"] = "1"
        elif kind == "floor":
            cmd = [bins["floor"], "json" if json_body else "plain", "close" if close else "keep"]
        else:
            port = free_port()
            d = tempfile.mkdtemp(dir=tmp)
            with open(os.path.join(ROOT, "loadtest/peers/nginx/nginx.conf.in")) as f:
                conf = f.read().replace("@PORT@", str(port)).replace("@DIR@", d)
            conf = conf.replace("@SSL@", " ssl" if tls else "")
            if tls:
                conf = re.sub(r"^(\s*)#tls ", r"\1", conf, flags=re.M)
                conf = conf.replace("@CERT@", tls["cert"]).replace("@KEY@", tls["key"])
            path = os.path.join(d, "nginx.conf")
            with open(path, "w") as f:
                f.write(conf)
            cmd = [bins["nginx"], "-c", path, "-p", d, "-e", os.path.join(d, "error.log")]
            self.addr = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen(pin + cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, text=True)
        try:
            if kind != "nginx":
                self.addr = self.proc.stdout.readline().strip()
            wait_listening(self.addr, self.proc)
        except BaseException:  # a failed start or an interrupt here leaves no server running
            self.stop()
            raise

    def stop(self):
        self.proc.send_signal(signal.SIGTERM if self.kind != "nginx" else signal.SIGQUIT)
        try:
            self.proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_wrk(addr, sc, secs, core, bins, tmp):
    cmd = ["taskset", "-c", str(core), "wrk", "-t1", f"-c{sc['conns']}", f"-d{secs}s", "--latency"]
    if sc.get("close"):
        cmd += ["-H", "Connection: close"]
    if sc.get("pipeline"):
        cmd += ["-s", os.path.join(ROOT, "loadtest/http/pipeline.lua")]
    cmd.append(f"{'https' if sc.get('tls') else 'http'}://{addr}{sc['path']}")
    if sc.get("pipeline"):
        cmd += ["--", str(sc["pipeline"]), sc["path"]]
    env, stats = None, None
    if sc.get("tls"):
        stats = os.path.join(tmp, "wrk-tls-stats")
        if os.path.exists(stats):
            os.unlink(stats)
        env = dict(os.environ, LD_PRELOAD=bins["wrk_tls"], WRK_TLS_STATS=stats,
                   WRK_TLS_FRESH="1" if sc.get("full_handshake") else "0")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=secs + 60, env=env).stdout
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = parse_wrk(out)
    # wrk's own CPU over the run: near 100 % means the client, not the server, set the pace.
    r["wrk_cpu_pct"] = ((ru1.ru_utime + ru1.ru_stime) - (ru0.ru_utime + ru0.ru_stime)) / secs * 100
    if stats:
        r["wrk_tls"] = {}
        try:
            with open(stats) as f:
                for line in f:
                    k, v = line.split()
                    r["wrk_tls"][k] = int(v)
        except OSError:
            r["wrk_tls"] = None  # the shim did not load: LD_PRELOAD refused it
    return r


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


def goro_tls_counts(addr, tls):
    """goro's goro_tls_handshakes_total by result, from its /metrics over TLS."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with client_context(tls).wrap_socket(raw, server_hostname="localhost") as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    return {m.group(1).decode(): int(m.group(2)) for m in
            re.finditer(rb'^goro_tls_handshakes_total\{result="(\w+)"\} (\d+)', got, re.M)}


def negotiated(addr):
    """What an OpenSSL client with default settings (as wrk's) gets: version, suite, group."""
    try:
        p = subprocess.run(["openssl", "s_client", "-connect", addr, "-servername", "localhost",
                            "-brief"], input="", capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = p.stdout + p.stderr
    got = [m.group(1).strip() for key in ("Protocol version", "Ciphersuite", "(?:Server|Peer) Temp Key")
           for m in [re.search(rf"^{key}: (.+)$", out, re.M)] if m]
    return " ".join(got) or None


def measure(kind, sc_name, args, bins, tmp, tls=None):
    sc = SCENARIOS[sc_name]
    srv = Server(kind, bins, args.server_core, tmp, json_body=sc["path"] == "/json",
                 close=bool(sc.get("close")), tls=tls if sc.get("tls") else None)
    try:
        run_wrk(srv.addr, sc, 1, args.wrk_core, bins, tmp)  # warm-up
        counts = sc.get("tls") and kind in GORO_BUILDS
        c0 = goro_tls_counts(srv.addr, tls) if counts else None
        before, slept0 = cpu_seconds(srv.proc.pid), sleeps(srv.proc.pid)
        r = run_wrk(srv.addr, sc, args.seconds, args.wrk_core, bins, tmp)
        after, slept1 = cpu_seconds(srv.proc.pid), sleeps(srv.proc.pid)
        user, kernel = after[0] - before[0], after[1] - before[1]
        cpu = user + kernel
        if counts:
            c1 = goro_tls_counts(srv.addr, tls)
            r["server_tls"] = {k: c1.get(k, 0) - c0.get(k, 0) for k in c1}
            r["server_tls"]["full"] = r["server_tls"].get("full", 0) - 1  # that /metrics fetch
        if sc.get("tls"):
            r["negotiated"] = negotiated(srv.addr)
    finally:
        srv.stop()
    r["cpu_us"] = cpu / r["requests"] * 1e6 if r["requests"] else None
    # The split (tick-sampled, the sum exact): the floor's user time is its
    # bare loop, so user time is where the work a server adds shows.
    r["user_us"] = user / r["requests"] * 1e6 if r["requests"] else None
    r["sys_us"] = kernel / r["requests"] * 1e6 if r["requests"] else None
    r["sleeps_per_req"] = (slept1 - slept0) / r["requests"] if r["requests"] else None
    return r


def hold_idle(addr, n, ctx=None):
    host, port = addr.rsplit(":", 1)
    socks = []
    req = b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"
    for _ in range(n):
        s = socket.create_connection((host, int(port)), timeout=10)
        if ctx:
            s = ctx.wrap_socket(s, server_hostname="localhost")  # a full handshake each
        s.sendall(req)
        got = b""
        while not got.endswith(b"Hello, World!"):
            chunk = s.recv(4096)
            if not chunk:
                raise RuntimeError("server closed an idle-test connection")
            got += chunk
        socks.append(s)
    return socks


def idle_memory(kind, n, args, bins, tmp, tls=None):
    srv = Server(kind, bins, args.server_core, tmp, max_conns=2 * n, tls=tls)
    ctx = client_context(tls) if tls else None
    try:
        for s in hold_idle(srv.addr, 1, ctx):  # warm: one request served
            s.close()
        time.sleep(0.5)
        before, fds = rss_kib(srv.proc.pid), open_fds(srv.proc.pid)
        t0 = time.time()
        socks = hold_idle(srv.addr, n, ctx)
        secs = time.time() - t0
        # At rest for 4 s (every server alike): goro releases an idle
        # connection's goroutine after 1 s (idle_release_after), its next
        # once-a-second sweep gives OpenSSL's buffers and the heap's free
        # pages back, and sysmon returns stacks unused for a whole half
        # second period.
        time.sleep(4.0)
        after = rss_kib(srv.proc.pid)
        # The servers close a connection idle for 120 s: count what is still open.
        held = open_fds(srv.proc.pid) - fds
        for s in socks:
            s.close()
    finally:
        srv.stop()
    if held < n * 0.99:
        print(f"warning: {kind} holds {held} of {n} idle connections (opening them took "
              f"{secs:.0f} s)", file=sys.stderr)
    return dict(before_kib=before, after_kib=after, per_conn_kib=(after - before) / n,
                held=held, open_secs=round(secs, 1))


def callgrind_ir(kind, n, bins, tmp, tls=None):
    """kind: goro, goro-pgo, goro-tls (goro over TLS: one handshake, then n
    requests) or floor."""
    out = os.path.join(tmp, f"cg-{kind}-{n}.out")
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    if kind.startswith("goro"):
        cmd += [goro_binary(bins, kind), "--addr", "127.0.0.1:0", "--maxprocs", "1"]
        if kind == "goro-tls":
            cmd += ["--tls_cert", tls["cert"], "--tls_key", tls["key"]]
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
    s = socket.create_connection((host, int(port)), timeout=60)
    if kind == "goro-tls":
        s = client_context(tls).wrap_socket(s, server_hostname="localhost")
    with s:
        req = b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n"
        for _ in range(n):
            s.sendall(req)
            got = b""
            while not got.endswith(b"Hello, World!"):
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError(f"{kind} under valgrind closed the connection")
                got += chunk
    proc.send_signal(signal.SIGTERM if kind.startswith("goro") else signal.SIGINT)
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


def binaries(build, bin_dir, pgo_build=None):
    """The servers' and wrk's TLS shim's paths (run.sh builds them)."""
    return {"goro": os.path.join(build, "bin/goro-hello"),
            "goro-pgo": os.path.join(pgo_build or os.path.join(ROOT, "build/pgo"),
                                     "bin/goro-hello"),
            "go": os.path.join(bin_dir, "gohello"),
            "floor": os.path.join(bin_dir, "floor"),
            "nginx": shutil.which("nginx") or "/usr/sbin/nginx",
            "wrk_tls": os.path.join(bin_dir, "wrk_tls.so")}


def goro_binary(bins, kind):
    """The goro-hello a goro kind runs: goro-pgo's build, or the release one
    (goro, goro-kept, goro-held, goro-tls)."""
    return bins["goro-pgo" if kind == "goro-pgo" else "goro"]


def rotated(xs, rnd):
    """xs in round rnd's order: each round starts one further along."""
    k = rnd % len(xs)
    return xs[k:] + xs[:k]


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def machine_line():
    # The first CPU's fields: its model, and its flags for PCID below.
    cpu = {}
    for line in (text_of("/proc/cpuinfo") or "").splitlines():
        key, sep, value = line.partition(":")
        if sep:
            cpu.setdefault(key.strip(), value.strip())
    model = cpu.get("model name", "unknown CPU")
    def version(cmd):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True)
            return (p.stdout + p.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            return "?"
    # The idle policy moves requests/s when wrk is the bottleneck (docs/DESIGN.md,
    # "Requests/s when wrk is the bottleneck"; loadtest/http/idle_policy.py).
    idle = text_of("/sys/devices/system/cpu/cpuidle/current_driver") or "?"
    window = text_of("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
    if window is not None:
        idle += f", guest_halt_poll_ns {window}"
    # Page-table isolation flushes the user TLB at every kernel entry where
    # the CPU lends no PCID. On the instance of s26a, which had it, every
    # server cost half as much again a request as on the ones before, goro
    # more than the floor ("The machine moves the ratio" in docs/DESIGN.md):
    # runs with it and without are not comparable.
    pti = text_of("/sys/devices/system/cpu/vulnerabilities/meltdown") or "?"
    flags = cpu.get("flags")
    pcid = "?" if flags is None else "pcid" if "pcid" in flags.split() else "no pcid"
    return (f"{os.cpu_count()} cores ({model}), Linux {platform.release()}, cpuidle {idle}, "
            f"meltdown {pti} ({pcid}); "
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


def tls_table(res, sc):
    """An HTTPS scenario's table: ratios to Go, wrk's CPU and handshake counts."""
    med, rounds = res["median"][sc], res["rounds"][sc]
    lines = ["| server | requests/s | p50 ms | p99 ms | CPU µs/req | rps vs Go | CPU vs Go | "
             "wrk CPU % | handshakes full/resumed (wrk) | errors | non-2xx |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    go = med.get("go") or {}
    for kind in SERVERS:
        m = med.get(kind)
        if kind not in TLS_SERVERS:
            if kind in res["servers"]:
                lines.append(f"| {kind} | n/a (no TLS) | | | | | | | | | |")
            continue
        if not m:
            continue
        vs_go = m["rps"] / go["rps"] if m["rps"] and go.get("rps") else None
        cpu_vs_go = m["cpu_us"] / go["cpu_us"] if m["cpu_us"] and go.get("cpu_us") else None
        hs = [r.get("wrk_tls") for r in rounds[kind]]
        hs = "—" if not hs or None in hs else \
            f"{sum(h.get('full', 0) for h in hs):,}/{sum(h.get('resumed', 0) for h in hs):,}"
        lines.append(f"| {kind} | {fmt(m['rps'], ',.0f')} | {fmt(m['p50'], '.2f')} | "
                     f"{fmt(m['p99'], '.2f')} | {fmt(m['cpu_us'], '.2f')} | {fmt(vs_go, '.2f')}x | "
                     f"{fmt(cpu_vs_go, '.2f')}x | {fmt(m.get('wrk_cpu_pct'), '.0f')} | {hs} | "
                     f"{m['errors']} | {m['non2xx']} |")
    lines.append("")
    for name in GORO_BUILDS:
        if not (rounds.get(name) and rounds.get("go")):
            continue
        per = [g["rps"] / o["rps"] if o["rps"] else None for g, o in zip(rounds[name], rounds["go"])]
        target = SCENARIOS[sc].get("target_vs_go")
        mr = median(per)
        verdict = "" if mr is None or target is None else \
            f"; target ≥ {target:.1f}x: {'met' if mr >= target else 'NOT met'}"
        lines.append(f"- {name}/Go requests/s per round: " + ", ".join(fmt(x, ".2f") for x in per) +
                     f" (median {fmt(mr, '.2f')}x{verdict})")
        cap = [o["cpu_us"] / g["cpu_us"] if g.get("cpu_us") and o.get("cpu_us") else None
               for g, o in zip(rounds[name], rounds["go"])]
        lines.append(f"- {name}/Go requests per server CPU-second (Go's CPU/req over {name}'s) "
                     "per round: " + ", ".join(fmt(x, ".2f") for x in cap) +
                     f" (median {fmt(median(cap), '.2f')}x)")
    busy = [k for k in TLS_SERVERS if (med.get(k) or {}).get("wrk_cpu_pct") and med[k]["wrk_cpu_pct"] >= 85]
    if busy:
        lines.append(f"- **wrk used ≥ 85 % of its core against {', '.join(busy)}**: the client, not "
                     "the server, may have set requests/s there; compare CPU per request instead.")
    for name in GORO_BUILDS:
        srv = [r.get("server_tls") for r in rounds.get(name, [])]
        if srv and None not in srv:
            lines.append(f"- {name}'s /metrics over each measured run (full/resumed/failed): " +
                         "; ".join(f"{c.get('full', 0):,}/{c.get('resumed', 0):,}/"
                                   f"{c.get('failed', 0):,}" for c in srv))
    neg = [f"{k} {rounds[k][0].get('negotiated')}" for k in TLS_SERVERS if rounds.get(k)]
    if neg:
        lines.append("- negotiated (openssl s_client, as wrk): " + "; ".join(neg))
    lines.append("")
    return lines


def per_round_lines(rounds):
    """Each build of goro against the floor and nginx, and the PGO build
    against the release one, round by round: the
    table's ratios are of medians taken separately, and the machine's speed
    drifts between rounds, so the median of the same-round ratios is quoted
    beside them."""
    lines = []
    pairs = [(name, label, peer, key) for name in GORO_BUILDS
             for label, peer, key in (("floor CPU per request", "floor", "cpu_us"),
                                      ("floor requests/s", "floor", "rps"),
                                      ("nginx requests/s", "nginx", "rps"))]
    # What profile-guided optimization changes, round by round.
    pairs += [("goro-pgo", "goro CPU per request", "goro", "cpu_us"),
              ("goro-pgo", "goro user time per request", "goro", "user_us")]
    for name, label, peer, key in pairs:
        per = summary.round_ratios(rounds.get(name), rounds.get(peer), key)
        if any(x is not None for x in per):
            lines.append(f"- {name}/{label} per round: " +
                         ", ".join("—" if x is None else f"{x:.2f}x" for x in per) +
                         f" (median {fmt(median(per), '.2f')}x)")
    if lines:
        lines.append("")
    return lines


def write_results(res, args, out_base):
    lines = [f"# HTTP load test, {res['date']}", "",
             f"- commit: `{res['commit']}`", f"- machine: {res['machine']}",
             f"- method: each server pinned to core {args.server_core} (one P, GOMAXPROCS=1, "
             f"one nginx worker, the floor is single-threaded), wrk -t1 pinned to core "
             f"{args.wrk_core}; {args.rounds} alternating rounds of {args.seconds} s after a 1 s "
             f"warm-up; medians. CPU/req: the server's utime+stime over the run / requests; "
             f"user and kernel: the two apart (each a median of its own); wrk CPU: the "
             f"client's share of its core (near 100%: the client, not the server, sets "
             f"requests/s); sleeps/req: the server's voluntary context switches per request "
             f"(each one a wake-up the client's next write pays for).",
             f"- command: `{res['command']}`", ""]
    if res.get("tls_cert"):
        lines[-1:-1] = [f"- HTTPS: {res['tls_cert']}; wrk with the shim built from loadtest/http/wrk_tls.c "
                        "preloaded (counts its handshakes; in https-handshake it drops the "
                        "session wrk keeps across reconnects, so each request is a full "
                        "handshake); the floor does not speak TLS (n/a)."]
    if res["errors"]:
        lines += ["**This run had errors** (wrk socket errors or non-2xx); see the errors column.",
                  ""]
    for sc in res["scenarios"]:
        s = SCENARIOS[sc]
        desc = f"{s['conns']} connections" + (f", pipelined x{s['pipeline']}" if s.get("pipeline") else "") + \
            (", Connection: close" if s.get("close") else "") + f", GET {s['path']}"
        if s.get("tls"):
            desc += " over TLS" + (": a full handshake per request" if s.get("full_handshake") else "")
            lines += [f"## {sc} ({desc})", ""] + tls_table(res, sc)
            continue
        lines += [f"## {sc} ({desc})", "",
                  "| server | requests/s | p50 ms | p99 ms | CPU µs/req | user | kernel | CPU vs floor | rps vs nginx | wrk CPU | sleeps/req | errors | non-2xx |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        floor_cpu = res["median"][sc].get("floor", {}).get("cpu_us")
        nginx_rps = res["median"][sc].get("nginx", {}).get("rps")
        for kind in SERVERS + EXTRA_SERVERS:
            m = res["median"][sc].get(kind)
            if not m:
                continue
            ratio = m["cpu_us"] / floor_cpu if m["cpu_us"] and floor_cpu else None
            vs_nginx = m["rps"] / nginx_rps if m["rps"] and nginx_rps else None
            lines.append(f"| {kind} | {fmt(m['rps'], ',.0f')} | {fmt(m['p50'], '.2f')} | "
                         f"{fmt(m['p99'], '.2f')} | {fmt(m['cpu_us'], '.2f')} | "
                         f"{fmt(m.get('user_us'), '.2f')} | {fmt(m.get('sys_us'), '.2f')} | {fmt(ratio, '.2f')}x | "
                         f"{fmt(vs_nginx, '.2f')}x | {fmt(m.get('wrk_cpu_pct'), '.0f')}% | "
                         f"{fmt(m.get('sleeps_per_req'), '.3f')} | {m['errors']} | {m['non2xx']} |")
        lines.append("")
        lines += per_round_lines(res["rounds"][sc])
    if res.get("idle"):
        lines += ["## Idle keep-alive connections (RSS per connection)", "",
                  "| server | connections | still open | RSS before KiB | RSS after KiB | KiB per connection |",
                  "|---|---:|---:|---:|---:|---:|"]
        for row in res["idle"]:
            lines.append(f"| {row['server']} | {row['n']} | {row['held']} | {row['before_kib']} | "
                         f"{row['after_kib']} | {row['per_conn_kib']:.2f} |")
        lines.append("")
        if any(row["server"] == "goro-kept" for row in res["idle"]):
            lines += ["goro-kept: goro-hello with `--idle_release_after 0`, each connection "
                      "keeping its goroutine (what a connection holds in the first second of "
                      "its rest).", ""]
    if res.get("idle_tls"):
        lines += ["## Idle keep-alive TLS connections (RSS per idle TLS connection)", "",
                  "Each after a full handshake (TLS 1.3, Python's ssl) and one request.", "",
                  "| server | connections | still open | RSS before KiB | RSS after KiB | KiB per idle TLS connection |",
                  "|---|---:|---:|---:|---:|---:|"]
        for row in res["idle_tls"]:
            lines.append(f"| {row['server']} | {row['n']} | {row['held']} | {row['before_kib']} | "
                         f"{row['after_kib']} | {row['per_conn_kib']:.2f} |")
        lines.append("")
    if res.get("callgrind"):
        lines += ["## Instructions per keep-alive request (callgrind, user space)", ""]
        for kind, v in res["callgrind"].items():
            what = " (the same over TLS 1.3, Python's ssl as the client)" if kind == "goro-tls" else ""
            lines.append(f"- {kind}{what}: {v['per_request']:,.0f} instructions/request "
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
    kinds = [k for k in SERVERS + EXTRA_SERVERS if k in res["servers"]]
    width = 0.8 / max(1, len(kinds))
    for i, kind in enumerate(kinds):
        rps = [(res["median"][sc].get(kind) or {}).get("rps") or 0 for sc in scs]
        cpu = [(res["median"][sc].get(kind) or {}).get("cpu_us") or 0 for sc in scs]
        xs = [j + (i - (len(kinds) - 1) / 2) * width for j in range(len(scs))]
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
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    ap.add_argument("--build", default=os.path.join(ROOT, "build/release"))
    ap.add_argument("--bin-dir", required=True, help="where run.sh put gohello and floor")
    ap.add_argument("--pgo-build", default=os.path.join(ROOT, "build/pgo"),
                    help="scripts/pgo.sh's build tree (goro-pgo's goro-hello)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--servers", default=",".join(SERVERS),
                    help=f"of {', '.join(SERVERS + EXTRA_SERVERS)}; goro-held: goro-hello with "
                         "release_when_drained off")
    ap.add_argument("--idle", default="5000,10000", help="idle connection counts ('' for none)")
    ap.add_argument("--idle-tls", default="2000,5000",
                    help="idle TLS connection counts, goro, Go and nginx ('' for none)")
    ap.add_argument("--callgrind", default="2000,12000", help="N1,N2 ('' to skip)")
    ap.add_argument("--server-core", type=int, default=0)
    ap.add_argument("--wrk-core", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(ROOT, "loadtest/results"))
    args = ap.parse_args()

    bins = binaries(args.build, args.bin_dir, args.pgo_build)
    servers = [s for s in args.servers.split(",") if s]
    scenarios = [s for s in args.scenarios.split(",") if s]
    for kind in servers:
        if kind not in SERVERS + EXTRA_SERVERS:
            ap.error(f"unknown server {kind} (known: {', '.join(SERVERS + EXTRA_SERVERS)})")
    for sc in scenarios:
        if sc not in SCENARIOS:
            ap.error(f"unknown scenario {sc} (known: {', '.join(SCENARIOS)})")
    if "goro-pgo" in servers and not os.path.exists(bins["goro-pgo"]):
        ap.error(f"{bins['goro-pgo']} is missing (loadtest/run.sh builds it with scripts/pgo.sh)")
    # Checked before the run: a bad value used to surface only at the end,
    # after every round, and lose them all.
    def counts(flag, value):
        try:
            got = [int(x) for x in value.split(",") if x]
        except ValueError:
            got = None
        if got is None or any(n <= 0 for n in got):
            ap.error(f"{flag} {value!r}: comma-separated positive counts expected")
        return got
    if args.rounds < 1 or args.seconds < 1:
        ap.error("--rounds and --seconds must be at least 1")
    idle_tls = counts("--idle-tls", args.idle_tls)
    counts("--idle", args.idle)
    cg = counts("--callgrind", args.callgrind)
    if cg and (len(cg) != 2 or cg[0] >= cg[1]):
        ap.error(f"--callgrind {args.callgrind!r}: N1,N2 with N1 < N2 expected ('' to skip)")
    use_tls = idle_tls or any(SCENARIOS[sc].get("tls") for sc in scenarios)
    if any(SCENARIOS[sc].get("tls") for sc in scenarios) and not os.path.exists(bins["wrk_tls"]):
        ap.error(f"{bins['wrk_tls']} is missing (loadtest/run.sh builds it from loadtest/http/wrk_tls.c)")

    def applies(sc, kind):
        return kind in TLS_SERVERS or not SCENARIOS[sc].get("tls")

    date = datetime.date.today().isoformat()
    res = dict(date=date, commit=commit_line(), machine=machine_line(),
               command="loadtest/run.sh " + " ".join(sys.argv[1:]),
               scenarios=scenarios, servers=servers, rounds={}, median={}, errors=False)
    tmp = tempfile.mkdtemp(prefix="goro-bench-")
    try:
        tls = make_cert(tmp) if use_tls else None
        if tls:
            res["tls_cert"] = ("one certificate for all servers, ECDSA P-256, self-signed, "
                               "SAN DNS:localhost, IP:127.0.0.1 (openssl req, made for this run)")
        for sc in scenarios:
            res["rounds"][sc] = {k: [] for k in servers if applies(sc, k)}
        for rnd in range(args.rounds):
            order = rotated(servers, rnd)
            for sc in scenarios:
                for kind in order:
                    if not applies(sc, kind):
                        continue
                    r = measure(kind, sc, args, bins, tmp, tls)
                    res["rounds"][sc][kind].append(r)
                    extra = ""
                    if "wrk_tls" in r:
                        h = r["wrk_tls"] or {}
                        extra = (f" wrk cpu {r['wrk_cpu_pct']:.0f}% handshakes full {h.get('full', '?')}"
                                 f" resumed {h.get('resumed', '?')}")
                    if "server_tls" in r:
                        extra += f" ({kind}: " + " ".join(f"{k} {v}" for k, v in r["server_tls"].items()) + ")"
                    print(f"round {rnd + 1} {sc:15} {kind:9} {r['rps']:>11,.0f} req/s "
                          f"p99 {fmt(r['p99'], '.2f')} ms cpu {fmt(r['cpu_us'], '.2f')} us/req "
                          f"(user {fmt(r.get('user_us'), '.2f')}) sleeps/req {fmt(r.get('sleeps_per_req'), '.3f')} "
                          f"errors {r['errors']} non2xx {r['non2xx']}{extra}", flush=True)
        for sc in scenarios:
            res["median"][sc] = {}
            for kind in res["rounds"][sc]:
                rs = res["rounds"][sc][kind]
                m = {k: median([r.get(k) for r in rs])
                     for k in ("rps", "p50", "p99", "cpu_us", "user_us", "sys_us", "wrk_cpu_pct",
                               "sleeps_per_req")}
                m["errors"] = sum(r["errors"] for r in rs)
                m["non2xx"] = sum(r["non2xx"] for r in rs)
                res["errors"] |= m["errors"] > 0 or m["non2xx"] > 0
                res["median"][sc][kind] = m
        res["idle"] = []
        # goro-pgo's connections hold what goro's do (the docstring).
        idle_servers = [k for k in servers if k != "goro-pgo"]
        for n in [int(x) for x in args.idle.split(",") if x]:
            for kind in idle_servers + (["goro-kept"] if "goro" in servers else []):
                row = idle_memory(kind, n, args, bins, tmp)
                row.update(server=kind, n=n)
                res["idle"].append(row)
                print(f"idle {n} {kind:9} {row['per_conn_kib']:.2f} KiB/conn", flush=True)
        res["idle_tls"] = []
        for n in idle_tls:
            for kind in idle_servers:
                if kind not in TLS_SERVERS:
                    continue
                row = idle_memory(kind, n, args, bins, tmp, tls)
                row.update(server=kind, n=n)
                res["idle_tls"].append(row)
                print(f"idle TLS {n} {kind:9} {row['per_conn_kib']:.2f} KiB/conn", flush=True)
        if args.callgrind and shutil.which("valgrind"):
            n1, n2 = [int(x) for x in args.callgrind.split(",")]
            res["callgrind"] = {}
            cg_kinds = [k for k in GORO_BUILDS if k in servers] + ["floor"]
            # goro-tls is goro's build over TLS: with goro, like the others.
            for kind in cg_kinds + (["goro-tls"] if tls and "goro" in servers else []):
                a, b = callgrind_ir(kind, n1, bins, tmp, tls), callgrind_ir(kind, n2, bins, tmp, tls)
                res["callgrind"][kind] = dict(n1=n1, n2=n2, ir_n1=a, ir_n2=b,
                                              per_request=(b - a) / (n2 - n1))
                print(f"callgrind {kind}: {(b - a) / (n2 - n1):,.0f} instructions/request", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"http-{date}")
    write_results(res, args, base)
    print(f"wrote {base}.md, .json, .png")
    # The summary of every run against the goals (loadtest/http/summary.py)
    # follows the results it is made from: tests/loadtest/summary_test.py
    # fails while it lags them.
    summary_md = os.path.join(ROOT, "loadtest/results/summary.md")
    if os.path.realpath(args.out) == os.path.realpath(os.path.dirname(summary_md)):
        summary.write(args.out, summary_md)
        print(f"wrote {summary_md}")
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
