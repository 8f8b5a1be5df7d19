// gomicro is the Go peer of goro-microbench (loadtest/micro): the same
// scheduler and sync micro-benchmarks, the same command line, the same one-line
// result format, so scripts/bench-micro.sh can run both alternately on the same
// machine and compare them side by side. See docs/benchmarks.md.
//
// Usage:
//
//	gomicro --bench NAME --procs N [--n ITERATIONS]
//
// (Go's flag package also accepts the single-dash spelling -bench.) --n 0
// picks the benchmark's default size, which is the same number on both sides.
//
// Output, one line on stdout, space-separated key=value pairs:
//
//	bench=yield impl=go procs=1 n=2000000 value=97.3 unit=ns/op elapsed_ms=194.6 ...
//
// `value` in `unit` is the headline figure the runner compares; any further
// keys are benchmark-specific detail. Errors go to stderr with exit status 1;
// an unknown benchmark exits with status 2.
//
// Nothing here depends on anything outside the standard library: build with
//
//	GOFLAGS=-mod=mod GOPROXY=off go build -o gomicro .
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
)

// result is one benchmark's outcome. extra holds detail keys in print order.
type result struct {
	value float64
	unit  string
	extra []kv
}

type kv struct {
	key string
	val string
}

func (r *result) add(key string, format string, args ...any) {
	r.extra = append(r.extra, kv{key, fmt.Sprintf(format, args...)})
}

type bench struct {
	defaultN int
	run      func(n int) result
}

// benches maps each name to its default size and body. The defaults are
// mirrored in loadtest/micro/main.cpp; keep them equal.
var benches = map[string]bench{
	"yield":    {2_000_000, benchYield},
	"spawn":    {1_000_000, benchSpawn},
	"skynet":   {1_000_000, benchSkynet},
	"fanout":   {10_000, benchFanout},
	"parkmem":  {100_000, benchParkmem},
	"pingpong": {500_000, benchPingpong},
	"bufchan":  {5_000_000, benchBufchan},
	"mutex":    {2_000_000, benchMutex},
	"select2":  {2_000_000, benchSelect2},
	"getppid":  {2_000_000, benchGetppid},
}

func names() string {
	var ns []string
	for n := range benches {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return strings.Join(ns, ",")
}

func main() {
	name := flag.String("bench", "", "benchmark to run: "+names())
	procs := flag.Int("procs", 1, "GOMAXPROCS for the run")
	n := flag.Int("n", 0, "iterations (0: the benchmark's default)")
	list := flag.Bool("list", false, "print the benchmark names and exit")
	flag.Parse()

	if *list {
		fmt.Println(strings.ReplaceAll(names(), ",", "\n"))
		return
	}
	b, ok := benches[*name]
	if !ok {
		fmt.Fprintf(os.Stderr, "gomicro: unknown benchmark %q (have %s)\n", *name, names())
		os.Exit(2)
	}
	if *procs < 1 {
		fmt.Fprintln(os.Stderr, "gomicro: --procs must be >= 1")
		os.Exit(1)
	}
	if *n <= 0 {
		*n = b.defaultN
	}
	runtime.GOMAXPROCS(*procs)
	r := b.run(*n)

	var sb strings.Builder
	fmt.Fprintf(&sb, "bench=%s impl=go procs=%d n=%d value=%.6g unit=%s", *name, *procs, *n,
		r.value, r.unit)
	for _, e := range r.extra {
		fmt.Fprintf(&sb, " %s=%s", e.key, e.val)
	}
	fmt.Println(sb.String())
}
