// Sync benchmarks: pingpong, bufchan, mutex, select2. Each mirrors the function
// of the same name in loadtest/micro/sync_benches.cpp.
package main

import (
	"sync"
	"time"
)

// benchPingpong: two goroutines bounce a value over two unbuffered channels;
// ns per round trip (one send and one receive each way).
func benchPingpong(n int) result {
	ping := make(chan int)
	pong := make(chan int)
	done := make(chan struct{})
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(done)
	}()
	start := time.Now()
	v := 0
	for i := 0; i < n; i++ {
		ping <- v
		v = <-pong
	}
	d := time.Since(start)
	close(ping)
	<-done
	r := result{value: nsPerOp(d, n), unit: "ns/op"}
	r.add("elapsed_ms", "%.3f", ms(d))
	return r
}

// benchBufchan: one producer sends n ints into a channel of capacity 1024, one
// consumer receives them; operations (items through the channel) per second.
func benchBufchan(n int) result {
	ch := make(chan int, 1024)
	done := make(chan int)
	go func() {
		sum := 0
		for v := range ch {
			sum += v
		}
		done <- sum
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		ch <- i
	}
	close(ch)
	<-done
	d := time.Since(start)
	r := result{value: float64(n) / d.Seconds(), unit: "ops/s"}
	r.add("ns_per_op", "%.2f", nsPerOp(d, n))
	return r
}

// benchMutex: 8 goroutines each take a sync.Mutex n/8 times around an
// increment; lock/unlock pairs per second.
func benchMutex(n int) result {
	const workers = 8
	per := n / workers
	var mu sync.Mutex
	var wg sync.WaitGroup
	counter := 0
	wg.Add(workers)
	start := time.Now()
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < per; i++ {
				mu.Lock()
				counter++
				mu.Unlock()
			}
			wg.Done()
		}()
	}
	wg.Wait()
	d := time.Since(start)
	ops := per * workers
	if counter != ops {
		panic("gomicro: mutex lost an increment")
	}
	r := result{value: float64(ops) / d.Seconds(), unit: "ops/s"}
	r.add("ns_per_op", "%.2f", nsPerOp(d, ops))
	return r
}

// benchSelect2: a two-case receive select where both cases are always ready
// (both channels are closed), so every select takes the full path (lock both
// channels, pick one at random) without ever parking; ns per select.
func benchSelect2(n int) result {
	a := make(chan int)
	b := make(chan int)
	close(a)
	close(b)
	hits := [2]int{}
	start := time.Now()
	for i := 0; i < n; i++ {
		select {
		case <-a:
			hits[0]++
		case <-b:
			hits[1]++
		}
	}
	d := time.Since(start)
	r := result{value: nsPerOp(d, n), unit: "ns/op"}
	r.add("first_case_share", "%.3f", float64(hits[0])/float64(n))
	return r
}
