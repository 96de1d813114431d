package main

import (
	"fmt"
	"slices"
	"sync"
	"syscall"
	"time"
)

// Latencies are the durations of single calls.
type Latencies []time.Duration

// Percentile returns the p-th percentile (0 < p ≤ 100) by the
// nearest-rank method: with 300 samples, p99 is the 297th smallest.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// ms is a duration in milliseconds, the unit of the latency figures.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Load is the outcome of calling something n times, some in flight at
// once.
type Load struct {
	Calls    int
	InFlight int
	Elapsed  time.Duration
	Lat      Latencies
}

// PerSecond is the throughput of the load.
func (l Load) PerSecond() float64 { return float64(l.Calls) / l.Elapsed.Seconds() }

// add is l and m as one load: their calls, time and latencies together.
func (l Load) add(m Load) Load {
	return Load{Calls: l.Calls + m.Calls, InFlight: max(l.InFlight, m.InFlight), Elapsed: l.Elapsed + m.Elapsed, Lat: append(l.Lat, m.Lat...)}
}

func (l Load) String() string {
	return fmt.Sprintf("%.0f/s p50 %.2f p99 %.2f ms", l.PerSecond(), ms(l.Lat.Percentile(50)), ms(l.Lat.Percentile(99)))
}

// drive calls call n times with inFlight workers and times every call.
// The first error stops the load.
func drive(n, inFlight int, call func(i int) error) (Load, error) {
	lat := make(Latencies, n)
	next := make(chan int)
	errs := make(chan error, inFlight)
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for i := range next {
				t0 := time.Now()
				if err := call(i); err != nil {
					errs <- err
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	elapsed := time.Since(start)
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	if err != nil {
		return Load{}, err
	}
	return Load{Calls: n, InFlight: inFlight, Elapsed: elapsed, Lat: lat}, nil
}

// cpuTime is the CPU time (user and system) this process has used. Beside
// wall-clock rates it tells how much of a loop's time was work and how
// much was waiting: for fsync, or for a core that other processes held.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
