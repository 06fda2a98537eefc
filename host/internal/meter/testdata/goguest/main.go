// Command goguest is a Go program built for GOOS=wasip1 by the meter tests:
// it runs Go's scheduler, garbage collector, maps, interfaces, defer and
// recover, so that instrumenting code the Go compiler generated is tested
// on what it does. Its output must not change with instrumentation.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
)

type shape interface{ area() float64 }

type rect struct{ w, h float64 }

func (r rect) area() float64 { return r.w * r.h }

type circle struct{ r float64 }

func (c circle) area() float64 { return 3 * c.r * c.r }

func primes(n int) []int {
	sieve := make([]bool, n)
	var ps []int
	for i := 2; i < n; i++ {
		if !sieve[i] {
			ps = append(ps, i)
			for j := i * i; j < n; j += i {
				sieve[j] = true
			}
		}
	}
	return ps
}

func safeDiv(a, b int) (q int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("recovered: %v", r)
		}
	}()
	return a / b, nil
}

func main() {
	ps := primes(200000)
	fmt.Println("primes:", len(ps), ps[len(ps)-1])

	words := strings.Fields(strings.Repeat("the quick brown fox jumps over the lazy dog ", 500))
	counts := map[string]int{}
	for _, w := range words {
		counts[w]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%s=%d ", k, counts[k])
	}
	fmt.Println()

	var wg sync.WaitGroup
	results := make(chan int, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			sum := 0
			for i := 0; i < 1000000; i++ {
				sum += (i ^ g) % 7
			}
			results <- sum
		}(g)
	}
	wg.Wait()
	close(results)
	total := 0
	for s := range results {
		total += s
	}
	fmt.Println("goroutines:", total)

	var garbage [][]byte
	for i := 0; i < 2000; i++ {
		garbage = append(garbage, make([]byte, 1024))
		if len(garbage) > 100 {
			garbage = garbage[:0]
		}
	}
	runtime.GC()
	fmt.Println("gc done")

	shapes := []shape{rect{2, 3}, circle{1}, rect{4, 5}}
	area := 0.0
	for _, s := range shapes {
		area += s.area()
	}
	fmt.Println("area:", area)

	_, err := safeDiv(1, 0)
	fmt.Println("div:", err, errors.Unwrap(err) == nil)
	fmt.Println("args:", os.Args[1:])
}
