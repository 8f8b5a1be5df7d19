#!/usr/bin/env bash
# Fails when a tracked source, script, CMake file or Markdown page cites a
# document or a repository path that does not exist in the repository.
#
#   scripts/check-doc-refs.sh        # from anywhere inside the work tree
#
# What counts as a reference, per line of every `git ls-files` file with a
# source, script, CMake or Markdown name:
#   - any path that ends in .md (`docs/DESIGN.md`, `HACKING.md`, a page in a
#     reference/ folder): it must name a tracked file, relative to the
#     repository root or to the citing file's folder;
#   - a path whose first component is a top-level folder of the repository
#     (`scheduler/sched.cpp`, `framework/http/`, `docs/benchmarks.md`), or a
#     header `goro/<name>.hpp` (under include/): it must name a tracked file or a
#     folder holding one; followed by a glob (`framework/http/router*.cpp`,
#     `scheduler/context_*.S`), it must be the prefix of a tracked path;
#   - a Markdown path followed by a quoted section, `docs/DESIGN.md "Timers"`:
#     the page must have a heading (or a bold lead-in) that starts with it.
# URLs, absolute paths and, outside Markdown, a string literal that holds
# nothing but the path (`"site/docs/readme.md"`: a file name a test creates)
# are not references. A line that mentions such a name as data in any other
# way carries the marker `doc-refs: ignore`. In YAML, `apiVersion:` and
# `kind:` lines name API groups and versions, not paths.
#
# Output: one line per broken reference, `file:line: missing TARGET`, and exit
# status 1; nothing and status 0 when every reference resolves.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

exec python3 - <<'PY'
import os
import re
import subprocess
import sys

files = subprocess.run(["git", "ls-files", "-z"], check=True, capture_output=True,
                       text=True).stdout.split("\0")
files = [f for f in files if f and os.path.isfile(f)]
tracked = set(files)
folders = set()
for f in files:
    parts = f.split("/")
    for i in range(1, len(parts)):
        folders.add("/".join(parts[:i]))
top = {f.split("/")[0] for f in files if "/" in f}

SCANNED = re.compile(r"(\.(cpp|hpp|h|c|cc|S|s|cmake|in|sh|py|md|txt|toml|go|lua|json|yml|yaml)"
                     r"|CMakeLists\.txt|Makefile|/run|\.clang-tidy)$")
URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
# A path-like token: not preceded by a path character (so /abs/paths and the
# tails of longer paths are not taken on their own).
TOKEN = re.compile(r"(?<![\w./~$-])((?:[\w.-]+/)*[\w.-]+/?)")
SECTION = re.compile(r"""([\w./-]+\.md)[,:]?\s+["“]([^"”]+)["”]""")
IGNORE = "doc-refs: ignore"
KUBE_API = re.compile(r"^\s*(-\s*)?(apiVersion|kind):")


def exists(path, base):
    path = path.rstrip("/")
    candidates = [path, os.path.normpath(os.path.join(base, path))]
    if path.startswith("goro/"):
        candidates.append("include/" + path)
    return any(c in tracked or c in folders for c in candidates)


def resolve(path, base):
    for c in (path, os.path.normpath(os.path.join(base, path))):
        if c in tracked:
            return c
    return None


_sections = {}


def sections(page):
    if page not in _sections:
        names = []
        fenced = False
        with open(page, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lstrip().startswith("```"):
                    fenced = not fenced
                if fenced:
                    continue
                m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m:
                    names.append(m.group(1))
                names += re.findall(r"\*\*(.+?)\*\*", line)
        _sections[page] = [n.strip().rstrip(".:").strip("`") for n in names]
    return _sections[page]


def is_reference(tok):
    if tok.endswith(".md") and re.search(r"[\w-]\.md$", tok):
        return True
    first = tok.split("/")[0]
    if first == "goro":  # <goro/net.hpp>, not "goro/Go" (a ratio) or "goro/net:" (a log prefix)
        return re.search(r"\.(hpp|h)$", tok) is not None
    return "/" in tok and first in top


def is_prefix(tok):
    return any(p.startswith(tok) for p in tracked)


errors = []
for f in files:
    if not SCANNED.search(f):
        continue
    base = os.path.dirname(f)
    try:
        with open(f, encoding="utf-8") as fh:
            lines = fh.readlines()
    except UnicodeDecodeError:
        continue  # binary
    for n, line in enumerate(lines, 1):
        if IGNORE in line:
            continue
        if f.endswith((".yaml", ".yml")) and KUBE_API.match(line):
            continue  # a Kubernetes API group ("apps/v1"), not a path
        text = URL.sub(" ", line)
        markdown = f.endswith(".md")
        for m in TOKEN.finditer(text):
            tok = m.group(1).rstrip(".")
            if not tok or not is_reference(tok):
                continue
            before, after = text[m.start() - 1:m.start()], text[m.end():m.end() + 1]
            if not markdown and before == '"' and after == '"':
                continue  # a file name as data
            if after in ("*", "{"):
                ok = is_prefix(tok)  # a glob or a brace list
            else:
                ok = exists(tok, base)
            if not ok:
                errors.append(f"{f}:{n}: missing {tok}")
        for m in SECTION.finditer(text):
            page, name = m.group(1), m.group(2).strip()
            target = resolve(page, base)
            if target is None:
                continue  # reported above as a missing file
            want = name.rstrip(".:")
            if not any(s == want or s.startswith(want) for s in sections(target)):
                errors.append(f'{f}:{n}: missing section "{name}" in {target}')

for e in errors:
    print(e)
if errors:
    print(f"check-doc-refs: {len(errors)} reference(s) to documents or paths that do not exist",
          file=sys.stderr)
    sys.exit(1)
PY
