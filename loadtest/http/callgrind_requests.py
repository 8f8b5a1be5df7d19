#!/usr/bin/env python3
# Instructions per keep-alive request with C connections in flight, by
# function (loadtest/README.md "Instructions per request"). The harness's
# own figure uses one connection, where every request also pays the
# scheduler's idle path, and that path lands in one of two modes from run to
# run (a ~500-instruction swing); with C connections each sending one
# request and the server answering all C before the next round (wrk's
# shape) the server mostly switches straight from one connection to the
# next, and the figure is steadier (within about 100 instructions between
# runs here, a busy machine's included).
#   usage: loadtest/http/callgrind_requests.py BIN [C] [OUTDIR]
#   env:   CG_PATH (default /plaintext), CG_ARGS (extra server flags)
# Prints the total per request and the 50 costliest functions' own share.
import os, tempfile, re, signal, socket, subprocess, sys, time, collections
BIN = sys.argv[1]
C = int(sys.argv[2]) if len(sys.argv) > 2 else 16
OUT = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="goro-cg-")
PATH = os.environ.get("CG_PATH", "/plaintext")
os.makedirs(OUT, exist_ok=True)  # valgrind cannot create it, and the server would not start
def run(rounds):
    out = os.path.join(OUT, f"c{C}-{rounds}.out")
    env = dict(os.environ, GORO_DEBUG="asyncpreemptoff=1")
    p = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", BIN,
                          "--addr", "127.0.0.1:0", "--maxprocs", "1"] + os.environ.get("CG_ARGS", "").split(),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    host, port = p.stdout.readline().strip().rsplit(":", 1)
    socks = []
    for _ in range(C):
        for _ in range(600):
            try:
                socks.append(socket.create_connection((host, int(port)), timeout=60)); break
            except OSError: time.sleep(0.1)
    req = f"GET {PATH} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    for _ in range(rounds):
        for s in socks: s.sendall(req)
        for s in socks:
            got = b""
            while True:
                c = s.recv(4096)
                if not c: raise SystemExit("closed")
                got += c
                i = got.find(b"\r\n\r\n")
                if i >= 0:
                    m = re.search(rb"Content-Length: (\d+)", got[:i])
                    if len(got) >= i + 4 + int(m.group(1)): break
    for s in socks: s.close()
    p.send_signal(signal.SIGTERM); p.wait(timeout=120)
    a = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", out],
                       capture_output=True, text=True).stdout
    fn = collections.Counter(); total = 0
    for line in a.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
        if m:
            v = int(m.group(1).replace(",", "")); name = m.group(2)
            if "PROGRAM TOTALS" in name: total = v; continue
            fn[name] += v
    return total, fn
r1, r2 = 100, 600
t1, f1 = run(r1); t2, f2 = run(r2)
n = (r2 - r1) * C
print(f"{os.path.basename(BIN)} c{C}: {(t2-t1)/n:,.1f} instructions/request")
d = {k: (f2[k]-f1.get(k,0))/n for k in f2}
for k, v in sorted(d.items(), key=lambda kv: -kv[1])[:50]:
    if v >= 4: print(f"{v:8.1f}  {k[:150]}")
