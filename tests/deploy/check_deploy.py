#!/usr/bin/env python3
"""The container story, checked without a container engine.

The Dockerfile: its two stages, the instructions an operator relies on
(non-root USER, EXPOSE, STOPSIGNAL, HEALTHCHECK, PORT), then goro-hello
started with the image's own environment (ENV lines, PORT moved to a port
the kernel picks), the HEALTHCHECK command run as the engine would run it
(healthy while serving, unhealthy once stopped), the STOPSIGNAL sent (exit
0, JSON lifecycle lines that parse).

The manifests (config/kubernetes): parsed as YAML, each field the README
promises checked, the pieces cross-checked (selectors, ports, the grace
period against the server's shutdown settings, the UID against the
Dockerfile's USER), and the Deployment's env handed to goro-hello
--print-config so a setting it does not know, or a bad value, fails here.

  python3 tests/deploy/check_deploy.py --root . --hello build/release/bin/goro-hello
"""

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import unittest

import yaml

ROOT = "."
HELLO = ""


def dockerfile():
    """The Dockerfile as (stages, instructions): continuation lines joined,
    comments dropped; each instruction is (KEYWORD, rest, stage index)."""
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
        text = f.read()
    logical, cur = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if not cur and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if stripped.endswith("\\"):
            cur += stripped[:-1] + " "
            continue
        logical.append(cur + stripped)
        cur = ""
    stages, out = [], []
    for instr in logical:
        keyword, _, rest = instr.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stages.append(rest.strip())
        out.append((keyword, rest.strip(), len(stages) - 1))
    return stages, out


def env_of(rest):
    """ENV's KEY=VALUE pairs (the form the Dockerfile uses)."""
    pairs = {}
    for token in shlex.split(rest):
        key, eq, value = token.partition("=")
        if not eq:
            raise AssertionError(f"ENV without '=': {rest}")
        pairs[key] = value
    return pairs


def duration_seconds(text):
    """goro's duration syntax as far as the manifests use it: 500ms, 5s, 2m."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", text)
    if not m:
        raise AssertionError(f"not a duration: {text!r}")
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return float(m.group(1)) * scale


class Hello:
    """goro-hello as a child process with `env` on top of a clean one."""

    def __init__(self, env, args=()):
        full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        full.update(env)
        self.proc = subprocess.Popen(
            [HELLO, *args], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        self.first = self.proc.stdout.readline()

    def stop(self, sig, timeout=15):
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout)
        rest = self.proc.stdout.read()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return code, [self.first] + rest.splitlines(), err


class DockerfileTest(unittest.TestCase):
    def setUp(self):
        self.stages, self.instrs = dockerfile()
        self.run_stage = len(self.stages) - 1

    def run_instr(self, keyword):
        return [rest for k, rest, s in self.instrs if k == keyword and s == self.run_stage]

    def test_two_stages_build_on_bookworm_run_on_slim(self):
        self.assertEqual(len(self.stages), 2, self.stages)
        self.assertRegex(self.stages[0], r"^debian:bookworm\s+AS\s+\w+$")
        self.assertEqual(self.stages[1], "debian:bookworm-slim")
        build_runs = " ".join(r for k, r, s in self.instrs if k == "RUN" and s == 0)
        self.assertIn("scripts/deps.sh --build", build_runs, "the project's own deps script")
        self.assertIn("--target goro-hello", build_runs)

    def test_run_stage_takes_only_binaries_and_runtime_libraries(self):
        copies = self.run_instr("COPY")
        self.assertTrue(copies)
        for c in copies:
            self.assertTrue(c.startswith("--from="), f"run stage copies from the build only: {c}")
        runs = " ".join(self.run_instr("RUN"))
        self.assertIn("--no-install-recommends", runs)
        self.assertIn("runtime-packages.txt", runs)
        self.assertNotIn("-dev", runs, "no development package in the run image")
        # The list the build stage writes, computed here for this machine's
        # goro-hello: runtime libraries only.
        pkgs = subprocess.run(
            ["bash", os.path.join(ROOT, "scripts/runtime-packages.sh"), HELLO],
            check=True, capture_output=True, text=True).stdout.split()
        self.assertIn("libc6", pkgs)
        self.assertIn("libstdc++6", pkgs)
        for p in pkgs:
            self.assertFalse(p.endswith("-dev"), p)

    def test_operator_facing_instructions(self):
        users = self.run_instr("USER")
        self.assertEqual(len(users), 1)
        uid = users[0].split(":")[0]
        self.assertTrue(uid.isdigit() and int(uid) != 0, f"numeric non-root USER: {users[0]}")
        self.assertEqual(self.run_instr("EXPOSE"), ["8080"])
        self.assertEqual(self.run_instr("STOPSIGNAL"), ["SIGTERM"])
        env = {}
        for e in self.run_instr("ENV"):
            env.update(env_of(e))
        self.assertEqual(env.get("PORT"), "8080")
        self.assertEqual(env.get("GORO_LOG_FORMAT"), "json")
        self.assertEqual(json.loads(self.run_instr("ENTRYPOINT")[0]), ["/usr/local/bin/goro-hello"])
        health = self.run_instr("HEALTHCHECK")
        self.assertEqual(len(health), 1)
        self.assertIn("/healthz", health[0])

    def test_dockerignore_keeps_build_trees_and_git_out(self):
        with open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8") as f:
            lines = {l.strip() for l in f if l.strip() and not l.startswith("#")}
        self.assertIn(".git", lines)
        self.assertIn("build/", lines)

    def test_image_environment_serves_on_every_interface_and_healthcheck_tracks_it(self):
        env = {}
        for e in self.run_instr("ENV"):
            env.update(env_of(e))
        env["PORT"] = "0"  # the image's 8080, moved to a port the kernel picks
        health = self.run_instr("HEALTHCHECK")[0]
        cmd = json.loads(health[health.index("CMD") + 3:].strip())
        hello = Hello(env)
        try:
            listening = json.loads(hello.first)
            self.assertEqual(listening["msg"], "listening")
            host, _, port = listening["addr"].rpartition(":")
            self.assertIn(host, ("[::]", "0.0.0.0"), "every interface, not loopback")
            probe_env = dict(os.environ, PORT=port)
            ok = subprocess.run(cmd, env=probe_env, capture_output=True, timeout=10)
            self.assertEqual(ok.returncode, 0, f"healthy while serving: {ok.stderr!r}")
        finally:
            code, lines, err = hello.stop(signal.SIGTERM)
        self.assertEqual(code, 0, f"STOPSIGNAL ends it cleanly: {err}")
        records = [json.loads(l) for l in lines if l.strip()]
        self.assertEqual([r["msg"] for r in records][-2:], ["shutting down", "stopped"])
        down = subprocess.run(cmd, env=dict(os.environ, PORT=port), capture_output=True,
                              timeout=10)
        self.assertNotEqual(down.returncode, 0, "unhealthy once the server is gone")


class ManifestTest(unittest.TestCase):
    def setUp(self):
        folder = os.path.join(ROOT, "config/kubernetes")
        with open(os.path.join(folder, "kustomization.yaml"), encoding="utf-8") as f:
            self.files = yaml.safe_load(f)["resources"]
        self.docs = {}
        for name in self.files:
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for doc in yaml.safe_load_all(f):
                    self.assertNotIn(doc["kind"], self.docs, f"one {doc['kind']}")
                    self.docs[doc["kind"]] = doc
        self.dep = self.docs["Deployment"]
        self.pod = self.dep["spec"]["template"]
        self.ctr = self.pod["spec"]["containers"][0]
        self.env = {e["name"]: e["value"] for e in self.ctr["env"]}

    def test_every_kind_is_there(self):
        self.assertEqual(set(self.docs),
                         {"Deployment", "Service", "HorizontalPodAutoscaler",
                          "PodDisruptionBudget"})
        self.assertEqual(self.dep["apiVersion"], "apps/v1")
        self.assertEqual(self.docs["HorizontalPodAutoscaler"]["apiVersion"], "autoscaling/v2")
        self.assertEqual(self.docs["PodDisruptionBudget"]["apiVersion"], "policy/v1")

    def test_resources_have_requests_and_limits(self):
        res = self.ctr["resources"]
        for kind in ("requests", "limits"):
            for what in ("cpu", "memory"):
                self.assertIn(what, res[kind], f"{kind}.{what}")
        self.assertNotIn("GOMAXPROCS", self.env, "it would override the CPU limit")
        with open(os.path.join(ROOT, "config/kubernetes/deployment.yaml"), encoding="utf-8") as f:
            self.assertIn("maxprocs follows the CPU limit", f.read())

    def test_probes(self):
        port = self.ctr["ports"][0]
        self.assertEqual(port["containerPort"], int(self.env["PORT"]))
        for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"),
                            ("startupProbe", "/healthz")):
            get = self.ctr[probe]["httpGet"]
            self.assertEqual(get["path"], path, probe)
            self.assertIn(get["port"], (port["name"], port["containerPort"]), probe)

    def test_grace_period_outlasts_the_servers_shutdown(self):
        own = duration_seconds(self.env["GORO_SHUTDOWN_DELAY"]) + duration_seconds(
            self.env["GORO_SHUTDOWN_TIMEOUT"])
        grace = self.pod["spec"]["terminationGracePeriodSeconds"]
        self.assertGreater(grace, own)
        # The lame duck is longer than a readiness period, so the probe sees it.
        ready = self.ctr["readinessProbe"]
        self.assertGreaterEqual(duration_seconds(self.env["GORO_SHUTDOWN_DELAY"]),
                                ready["periodSeconds"] * ready["failureThreshold"])

    def test_security(self):
        pod_sc = self.pod["spec"]["securityContext"]
        ctr_sc = self.ctr["securityContext"]
        self.assertTrue(pod_sc.get("runAsNonRoot") or ctr_sc.get("runAsNonRoot"))
        self.assertTrue(ctr_sc["readOnlyRootFilesystem"])
        self.assertFalse(ctr_sc["allowPrivilegeEscalation"])
        _, instrs = dockerfile()
        user = [r for k, r, _ in instrs if k == "USER"][-1].split(":")[0]
        self.assertEqual(pod_sc["runAsUser"], int(user), "the image's USER")

    def test_pieces_refer_to_each_other(self):
        labels = self.pod["metadata"]["labels"]
        selector = self.dep["spec"]["selector"]["matchLabels"]
        self.assertTrue(selector.items() <= labels.items())
        svc = self.docs["Service"]["spec"]
        self.assertTrue(svc["selector"].items() <= labels.items())
        self.assertIn(svc["ports"][0]["targetPort"],
                      (self.ctr["ports"][0]["name"], self.ctr["ports"][0]["containerPort"]))
        hpa = self.docs["HorizontalPodAutoscaler"]["spec"]
        self.assertEqual(hpa["scaleTargetRef"]["kind"], "Deployment")
        self.assertEqual(hpa["scaleTargetRef"]["name"], self.dep["metadata"]["name"])
        self.assertEqual(hpa["metrics"][0]["resource"]["name"], "cpu")
        self.assertLessEqual(hpa["minReplicas"], hpa["maxReplicas"])
        pdb = self.docs["PodDisruptionBudget"]["spec"]
        self.assertTrue(pdb["selector"]["matchLabels"].items() <= labels.items())
        self.assertLess(pdb["minAvailable"], hpa["minReplicas"], "a drain can make progress")

    def test_goro_hello_accepts_the_deployments_env(self):
        out = subprocess.run([HELLO, "--print-config"], env=dict(self.env),
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 0, out.stderr)
        shown = {}
        for line in out.stdout.splitlines():
            m = re.match(r'^(\w+) = (.*?)\s+# (.*)$', line)
            if m:
                shown[m.group(1)] = (m.group(2), m.group(3))
        for name in self.env:
            key = "addr" if name == "PORT" else name[len("GORO_"):].lower()
            self.assertIn(key, shown, name)
            self.assertEqual(shown[key][1], f"env {name}", f"{key} comes from {name}")
        self.assertEqual(shown["addr"][0], '":8080"')
        self.assertEqual(shown["log_format"][0], '"json"')


def main():
    global ROOT, HELLO
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--hello", required=True)
    args, rest = parser.parse_known_args()
    ROOT, HELLO = os.path.abspath(args.root), os.path.abspath(args.hello)
    unittest.main(argv=[sys.argv[0], "-v", *rest])


if __name__ == "__main__":
    main()
