// Scheduler benchmarks: yield, spawn, skynet, fanout, parkmem, getppid.
// Each mirrors the function of the same name in loadtest/micro/sched_benches.cpp;
// a change to the shape of one must be made to the other.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func nsPerOp(d time.Duration, ops int) float64 { return float64(d.Nanoseconds()) / float64(ops) }
func ms(d time.Duration) float64               { return float64(d.Nanoseconds()) / 1e6 }

// benchYield: two goroutines alternate runtime.Gosched() n/2 times each; the
// figure is ns per yield, counting both goroutines' yields. Run it on 1 P so
// every yield is a switch to the other goroutine.
func benchYield(n int) result {
	per := n / 2
	var wg sync.WaitGroup
	wg.Add(2)
	start := time.Now()
	for k := 0; k < 2; k++ {
		go func() {
			for i := 0; i < per; i++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	d := time.Since(start)
	r := result{value: nsPerOp(d, 2*per), unit: "ns/op"}
	r.add("elapsed_ms", "%.3f", ms(d))
	return r
}

// benchSpawn: spawn n goroutines that each only signal completion (WaitGroup
// Done); ns per goroutine from the first spawn to the last completion.
func benchSpawn(n int) result {
	var wg sync.WaitGroup
	wg.Add(n)
	start := time.Now()
	for i := 0; i < n; i++ {
		go wg.Done()
	}
	wg.Wait()
	d := time.Since(start)
	r := result{value: nsPerOp(d, n), unit: "ns/op"}
	r.add("elapsed_ms", "%.3f", ms(d))
	return r
}

// skynet: the classic 10-ary tree of goroutines; each leaf sends its number,
// each inner node sums its 10 children through an unbuffered channel.
func skynet(c chan<- int64, num int64, size int64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int64)
	child := size / 10
	for i := int64(0); i < 10; i++ {
		go skynet(rc, num+i*child, child)
	}
	var sum int64
	for i := 0; i < 10; i++ {
		sum += <-rc
	}
	c <- sum
}

// benchSkynet: n leaves (a power of 10); total ms. The sum is checked.
func benchSkynet(n int) result {
	if !isPowerOf10(n) {
		fmt.Fprintln(os.Stderr, "gomicro: skynet needs --n a power of 10")
		os.Exit(1)
	}
	c := make(chan int64)
	start := time.Now()
	go skynet(c, 0, int64(n))
	sum := <-c
	d := time.Since(start)
	want := int64(n) * int64(n-1) / 2
	if sum != want {
		fmt.Fprintf(os.Stderr, "gomicro: skynet sum %d, want %d\n", sum, want)
		os.Exit(1)
	}
	r := result{value: ms(d), unit: "ms"}
	r.add("goroutines", "%d", skynetGoroutines(n))
	r.add("sum", "%d", sum)
	return r
}

func isPowerOf10(n int) bool {
	for n > 1 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}

func skynetGoroutines(n int) int {
	total := 0
	for ; n >= 1; n /= 10 {
		total += n
	}
	return total
}

// fanoutWork is task i's CPU work: ((i*7919)%100)^2 * kFanoutScale rounds of
// a splitmix-style mixer, a dependent chain that neither compiler can
// vectorise or fold. The quadratic makes the task sizes skewed (most of the
// work is in a few big tasks), so the 2-P run only scales if idle Ps steal.
// kFanoutScale puts 10,000 tasks at roughly 200-400 ms on one core here.
const kFanoutScale = 6

func fanoutWork(i int) uint64 {
	r := uint64((i * 7919) % 100)
	rounds := r * r * kFanoutScale
	x := uint64(i) + 0x9e3779b97f4a7c15
	for k := uint64(0); k < rounds; k++ {
		x ^= x >> 31
		x *= 0xbf58476d1ce4e5b9
		x += k
	}
	return x
}

// benchFanout: n uneven tasks, one goroutine each, joined by a WaitGroup;
// total ms. The runner divides the 1-P time by the 2-P time for the speedup.
func benchFanout(n int) result {
	var wg sync.WaitGroup
	results := make([]uint64, n)
	wg.Add(n)
	start := time.Now()
	for i := 0; i < n; i++ {
		i := i
		go func() {
			results[i] = fanoutWork(i)
			wg.Done()
		}()
	}
	wg.Wait()
	d := time.Since(start)
	var check uint64
	for _, v := range results {
		check ^= v
	}
	r := result{value: ms(d), unit: "ms"}
	r.add("checksum", "%016x", check)
	return r
}

// rssBytes reads the resident set size from /proc/self/statm.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomicro:", err)
		os.Exit(1)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gomicro: statm:", err)
		os.Exit(1)
	}
	return pages * int64(os.Getpagesize())
}

// benchParkmem: n goroutines each signal that they started and then block in
// a channel receive; bytes of RSS per parked goroutine (after - before) / n.
func benchParkmem(n int) result {
	block := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	runtime.GC()
	before := rssBytes()
	for i := 0; i < n; i++ {
		go func() {
			started.Done()
			<-block
		}()
	}
	started.Wait()
	after := rssBytes()
	r := result{value: float64(after-before) / float64(n), unit: "B/goroutine"}
	r.add("rss_before_kib", "%d", before/1024)
	r.add("rss_after_kib", "%d", after/1024)
	close(block)
	return r
}

// benchGetppid: syscall.Getppid in a loop, ns/op. Go issues getppid as a raw
// syscall (no entersyscall/exitsyscall, the P never leaves), which is the
// fast path goro::blocking must stay within 2x of. For reference it also
// times the same syscall through syscall.Syscall, which does the
// entersyscall/exitsyscall dance (`handoff_path_ns`), and reports both.
func benchGetppid(n int) result {
	start := time.Now()
	var acc int
	for i := 0; i < n; i++ {
		acc += syscall.Getppid()
	}
	d := time.Since(start)
	start = time.Now()
	for i := 0; i < n; i++ {
		p, _, _ := syscall.Syscall(syscall.SYS_GETPPID, 0, 0, 0)
		acc += int(p)
	}
	d2 := time.Since(start)
	r := result{value: nsPerOp(d, n), unit: "ns/op"}
	r.add("handoff_path_ns", "%.2f", nsPerOp(d2, n))
	r.add("acc", "%d", acc%7)
	return r
}
