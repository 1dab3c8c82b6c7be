package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/proxy"
	"github.com/hermes-units/hermes/sse"
	"github.com/hermes-units/hermes/units"
)

// Provider proxy: per-event overhead, one stream's throughput, and memory
// with many idle streams. The proxy runs in a child process (so that its
// RSS is its own); the scripted upstream and the clients run here.
const (
	proxyLatencyEvents = 2000
	proxyRateEvents    = 100_000
	proxyRateTrials    = 5
	proxyIdleStreams   = 1000
)

func init() {
	children["proxy"] = proxyChild
}

// proxyChild serves a proxy whose one provider is the upstream at args[0],
// prints "ready ADDR", and exits when its stdin closes.
func proxyChild(args []string) int {
	cfg := &units.Config{Providers: map[string]units.Provider{"bench": {BaseURL: "http://" + args[0] + "/v1", Models: map[string]units.ProviderModel{"m": {}}}}}
	set, err := providers.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	p, err := proxy.New(proxy.Options{Providers: set, Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := p.Listen(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go func() {
		// "mem" asks for the Go runtime's figures after a GC; EOF ends.
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "mem" {
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				fmt.Printf("mem %d %d %d %d\n", ms.HeapInuse, ms.StackInuse, ms.Sys, runtime.NumGoroutine())
			}
		}
		cancel()
	}()
	fmt.Printf("ready %s\n", ln.Addr())
	if err := p.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// benchUpstream plays the provider. A request's "model" field is ignored;
// its mode comes from the X-Bench header: "latency" sends one event per
// value received on next and stamps it with the send time; "rate" sends
// proxyRateEvents events as fast as it can, flushing each like a provider
// does; "idle" sends one event and waits for the client to go.
type benchUpstream struct {
	start time.Time
	next  chan struct{}
	idle  sync.WaitGroup // one Done per idle stream whose first event is out
}

const benchChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"token %d"},"finish_reason":null}]}`

func (u *benchUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl := w.(http.Flusher)
	fl.Flush()
	switch r.Header.Get("X-Bench") {
	case "latency":
		for range proxyLatencyEvents {
			select {
			case <-u.next:
			case <-r.Context().Done():
				return
			}
			fmt.Fprintf(w, "data: "+benchChunk+"\n\n", time.Since(u.start).Nanoseconds())
			fl.Flush()
		}
	case "rate":
		for i := range proxyRateEvents {
			fmt.Fprintf(w, "data: "+benchChunk+"\n\n", i)
			fl.Flush()
		}
	case "idle":
		fmt.Fprintf(w, "data: "+benchChunk+"\n\n", 0)
		fl.Flush()
		u.idle.Done()
		<-r.Context().Done()
		return
	}
	io.WriteString(w, "data: [DONE]\n\n")
	fl.Flush()
}

// openStream posts a streaming chat request to base and returns the
// response once its headers are in.
func openStream(ctx context.Context, c *http.Client, base, mode string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bench", mode)
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", resp.Status, b)
	}
	return resp, nil
}

// latency returns the one-way delivery time of each event, in lockstep:
// the upstream sends the next event once the client has read the last one.
func (u *benchUpstream) latency(ctx context.Context, c *http.Client, base string) ([]time.Duration, error) {
	resp, err := openStream(ctx, c, base, "latency")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body)
	var ds []time.Duration
	for len(ds) < proxyLatencyEvents {
		u.next <- struct{}{}
		for {
			p, err := rd.Next()
			if err != nil {
				return nil, err
			}
			if p.Kind != sse.Event {
				continue
			}
			now := time.Since(u.start)
			_, rest, _ := strings.Cut(string(p.Data), `"content":"token `)
			num, _, _ := strings.Cut(rest, `"`)
			sent, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad event %q", p.Data)
			}
			ds = append(ds, now-time.Duration(sent))
			break
		}
	}
	return ds, nil
}

// rate returns events per second through one stream, read to [DONE].
func rate(ctx context.Context, c *http.Client, base string) (float64, error) {
	start := time.Now()
	resp, err := openStream(ctx, c, base, "rate")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	rd := sse.NewReader(bufio.NewReaderSize(resp.Body, 64<<10))
	n := 0
	for {
		p, err := rd.Next()
		if err != nil {
			return 0, err
		}
		if p.Kind != sse.Event {
			continue
		}
		if string(p.Data) == "[DONE]" {
			break
		}
		n++
	}
	if n != proxyRateEvents {
		return 0, fmt.Errorf("got %d events, want %d", n, proxyRateEvents)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func benchProxy(ctx context.Context) ([]Row, error) {
	up := &benchUpstream{start: time.Now(), next: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: up}
	go srv.Serve(ln)
	defer srv.Close()

	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-child", "proxy", ln.Addr().String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		return nil, fmt.Errorf("proxy child: got %q, %v, want ready ADDR", line, err)
	}
	direct, viaProxy := "http://"+ln.Addr().String(), "http://"+addr
	tr := &http.Transport{MaxIdleConnsPerHost: proxyIdleStreams, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	var rows []Row
	// Warm both paths up (connections, code paths) before measuring.
	for _, base := range []string{direct, viaProxy} {
		if _, err := up.latency(ctx, c, base); err != nil {
			return nil, err
		}
	}
	dDirect, err := up.latency(ctx, c, direct)
	if err != nil {
		return nil, err
	}
	dProxy, err := up.latency(ctx, c, viaProxy)
	if err != nil {
		return nil, err
	}
	med := percentile(dProxy, 0.5) - percentile(dDirect, 0.5)
	p99 := percentile(dProxy, 0.99) - percentile(dDirect, 0.99)
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
	rows = append(rows, Row{
		Figure: "proxy overhead per SSE event",
		Value:  fmt.Sprintf("median %s, p99 %s (target p99 ≤ 1 ms)", us(med), us(p99)),
		Method: fmt.Sprintf("%d chat chunks in lockstep (next sent once the last is read), one-way send→read time through the proxy minus direct to the same upstream, same run; direct median %s p99 %s, proxy median %s p99 %s",
			proxyLatencyEvents, us(percentile(dDirect, 0.5)), us(percentile(dDirect, 0.99)), us(percentile(dProxy, 0.5)), us(percentile(dProxy, 0.99))),
	})

	var rDirect, rProxy []float64
	for range proxyRateTrials {
		r, err := rate(ctx, c, direct)
		if err != nil {
			return rows, err
		}
		rDirect = append(rDirect, r)
		r, err = rate(ctx, c, viaProxy)
		if err != nil {
			return rows, err
		}
		rProxy = append(rProxy, r)
	}
	md, mp := median(rDirect), median(rProxy)
	rows = append(rows, Row{
		Figure: "events per second through one stream",
		Value:  fmt.Sprintf("proxy %.0f/s, direct %.0f/s, ratio %.2f (target ≥ 0.90)", mp, md, mp/md),
		Method: fmt.Sprintf("%d chat chunks of ~190 B, upstream flushing each, client reading to [DONE]; median of %d alternating trials", proxyRateEvents, proxyRateTrials),
	})

	base, err := rss(cmd.Process.Pid)
	if err != nil {
		return rows, err
	}
	up.idle.Add(proxyIdleStreams)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var resps []*http.Response
	defer func() {
		cancel()
		for _, r := range resps {
			r.Body.Close()
		}
	}()
	for range proxyIdleStreams {
		r, err := openStream(sctx, c, viaProxy, "idle")
		if err != nil {
			return rows, err
		}
		resps = append(resps, r)
	}
	up.idle.Wait()
	time.Sleep(500 * time.Millisecond) // let the proxy's allocations settle before reading RSS
	held, err := rss(cmd.Process.Pid)
	if err != nil {
		return rows, err
	}
	if _, err := io.WriteString(stdin, "mem\n"); err != nil {
		return rows, err
	}
	line, err = out.ReadString('\n')
	var heap, stack, sys, gs int
	if _, serr := fmt.Sscanf(line, "mem %d %d %d %d", &heap, &stack, &sys, &gs); err != nil || serr != nil {
		return rows, fmt.Errorf("proxy child: got %q, %v, %v, want mem figures", line, err, serr)
	}
	rows = append(rows, Row{
		Figure: fmt.Sprintf("proxy memory with %d idle streams", proxyIdleStreams),
		Value: fmt.Sprintf("Go heap in use %.1f MB, goroutine stacks %.1f MB, RSS %.1f MB (%.1f MB above idle) (target ≤ 50 MB)",
			float64(heap)/1e6, float64(stack)/1e6, float64(held)/1024, float64(held-base)/1024),
		Method: fmt.Sprintf("VmRSS of the proxy process (/proc/PID/status) with every stream open through it, first event relayed, upstream silent, read before the runtime figures (runtime.MemStats HeapInuse, StackInuse after runtime.GC); %d goroutines (%.1f per stream); idle proxy after the other rows: %.1f MB RSS",
			gs, float64(gs)/proxyIdleStreams, float64(base)/1024),
	})
	return rows, nil
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// rss reads VmRSS (kB) of pid.
func rss(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, errors.New("no VmRSS line in /proc/PID/status")
}
