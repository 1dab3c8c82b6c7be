package main

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hermes-units/hermes/internal/sse"
	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/proxy"
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
	children["upstream"] = upstreamChild
}

// upstreamChild plays the provider in its own process, so that neither the
// client nor the proxy shares a process (a scheduler, a garbage collector)
// with it. "latency" streams send one event per line read on stdin,
// stamped with the wall clock in nanoseconds (comparable across processes
// of one machine); the other modes are benchUpstream's. It prints
// "ready ADDR" and exits when stdin closes during no latency stream.
func upstreamChild([]string) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	next := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			next <- struct{}{}
		}
		os.Exit(0)
	}()
	up := &benchUpstream{next: next, wall: true}
	fmt.Printf("ready %s\n", ln.Addr())
	http.Serve(ln, up)
	return 0
}

// benchToken is the proxy token of the bench's proxy.
const benchToken = "hermes-BENCHTOKEN0123456789"

// proxyChild serves a proxy whose provider "bench" (model "m") is the
// upstream at args[0] over HTTP and, when args[1] is given, whose provider
// "benchtls" (model "t") is the upstream at args[1] over HTTPS (trusted
// through SSL_CERT_FILE). It prints "ready ADDR", and exits when its stdin
// closes.
func proxyChild(args []string) int {
	cfg := &units.Config{Providers: map[string]units.Provider{"bench": {BaseURL: "http://" + args[0] + "/v1", Models: map[string]units.ProviderModel{"m": {}}}}}
	if len(args) > 1 {
		cfg.Providers["benchtls"] = units.Provider{BaseURL: "https://" + args[1] + "/v1", Models: map[string]units.ProviderModel{"t": {}}}
	}
	set, err := providers.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The connection cap is as high as the descriptor limit allows: the
	// idle-stream rows hold many streams at once.
	p, err := proxy.New(proxy.Options{Providers: set, Listen: "127.0.0.1:0", Token: benchToken, Limits: proxy.Limits{MaxConns: 1 << 20}})
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
	wall  bool // stamp events with the wall clock (UnixNano), not time since start
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
			stamp := time.Since(u.start).Nanoseconds()
			if u.wall {
				stamp = time.Now().UnixNano()
			}
			fmt.Fprintf(w, "data: "+benchChunk+"\n\n", stamp)
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

// openStream posts a streaming chat request for model m to base and
// returns the response once its headers are in.
func openStream(ctx context.Context, c *http.Client, base, mode string) (*http.Response, error) {
	return openModelStream(ctx, c, base, mode, "m")
}

func openModelStream(ctx context.Context, c *http.Client, base, mode, model string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bench", mode)
	req.Header.Set("Authorization", "Bearer "+benchToken)
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

// latencyExternal returns the one-way delivery time of each event, in
// lockstep, from the upstream child: writing a line to next asks it for
// the next event once the last was read; stamps are wall-clock nanoseconds.
func latencyExternal(ctx context.Context, c *http.Client, base string, next io.Writer) ([]time.Duration, error) {
	resp, err := openStream(ctx, c, base, "latency")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rd := sse.NewReader(resp.Body)
	var ds []time.Duration
	for len(ds) < proxyLatencyEvents {
		if _, err := io.WriteString(next, "\n"); err != nil {
			return nil, err
		}
		for {
			p, err := rd.Next()
			if err != nil {
				return nil, err
			}
			if p.Kind != sse.Event {
				continue
			}
			now := time.Now().UnixNano()
			_, rest, _ := strings.Cut(string(p.Data), `"content":"token `)
			num, _, _ := strings.Cut(rest, `"`)
			sent, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("bad event %q", p.Data)
			}
			ds = append(ds, time.Duration(now-sent))
			break
		}
	}
	// The upstream ends the stream with [DONE] once all were sent.
	io.Copy(io.Discard, resp.Body)
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

// benchProxy runs the proxy section: the per-event latency and CPU rows
// through a proxy child on the upstream child, then the memory rows of
// idle streams through fresh proxy children on an in-process upstream.
func benchProxy(ctx context.Context) ([]Row, error) {
	// The upstream of the latency and CPU rows: its own process.
	uc, err := startChild(ctx, "upstream", nil)
	if err != nil {
		return nil, err
	}
	defer uc.stop()

	// The in-process upstream serves the memory rows (idle streams).
	up := &benchUpstream{start: time.Now(), next: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: up}
	go srv.Serve(ln)
	defer srv.Close()

	pcx, err := startProxyChild(ctx, nil, uc.addr)
	if err != nil {
		return nil, err
	}
	defer pcx.stop()
	direct, viaProxy := "http://"+uc.addr, "http://"+pcx.addr
	tr := &http.Transport{MaxIdleConnsPerHost: proxyIdleStreams, MaxConnsPerHost: 0, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}

	var rows []Row
	row, err := proxyLatencyRow(ctx, c, direct, viaProxy, uc.stdin)
	if err != nil {
		return nil, err
	}
	rows = append(rows, row)
	row, err = proxyCPURow(ctx, c, direct, viaProxy, pcx.cmd.Process.Pid, uc.cmd.Process.Pid)
	if err != nil {
		return rows, err
	}
	rows = append(rows, row)

	// The memory rows: a fresh proxy on the in-process upstream, whose
	// idle streams this process counts.
	pc, err := startProxyChild(ctx, nil, ln.Addr().String())
	if err != nil {
		return rows, err
	}
	defer pc.stop()
	row, err = up.idleMemory(ctx, pc, c, "http://"+pc.addr, "m", true, func() string { return "fresh proxy before any call" })
	if err != nil {
		return rows, err
	}
	row.Figure = fmt.Sprintf("proxy memory with %d idle streams", proxyIdleStreams)
	rows = append(rows, row)

	for _, h2 := range []bool{true, false} {
		row, err = up.idleTLS(ctx, ln.Addr().String(), h2)
		if err != nil {
			return rows, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// proxyLatencyRow measures the latency the proxy adds per event: both
// paths warmed up, then latencyExternal direct and via the proxy, the
// upstream child asked for each event through next.
func proxyLatencyRow(ctx context.Context, c *http.Client, direct, viaProxy string, next io.Writer) (Row, error) {
	// Warm both paths up (connections, code paths) before measuring.
	for _, base := range []string{direct, viaProxy} {
		if _, err := latencyExternal(ctx, c, base, next); err != nil {
			return Row{}, err
		}
	}
	dDirect, err := latencyExternal(ctx, c, direct, next)
	if err != nil {
		return Row{}, err
	}
	dProxy, err := latencyExternal(ctx, c, viaProxy, next)
	if err != nil {
		return Row{}, err
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
	med := percentile(dProxy, 0.5) - percentile(dDirect, 0.5)
	p99 := percentile(dProxy, 0.99) - percentile(dDirect, 0.99)
	return Row{
		Figure: "proxy latency per SSE event, added to a direct connection",
		Value:  fmt.Sprintf("median %s, p99 %s (%s)", us(med), us(p99), atMostDur(p99, time.Millisecond)),
		Method: fmt.Sprintf("%d chat chunks per path in lockstep (the upstream sends the next once the client read the last); upstream, proxy and client are three processes; one-way send→read time by the wall clock, through the proxy minus direct, percentile by percentile; direct median %s p99 %s, proxy median %s p99 %s",
			proxyLatencyEvents, us(percentile(dDirect, 0.5)), us(percentile(dDirect, 0.99)), us(percentile(dProxy, 0.5)), us(percentile(dProxy, 0.99))),
	}, nil
}

// proxyCPURow measures the CPU of the proxy process pid per event,
// streaming as fast as the upstream sends, against a direct connection:
// proxyRateTrials alternating trials of rate on each path, with the CPU
// of the upstream process (upPid) and of the client (this process) per
// event on both paths beside it.
func proxyCPURow(ctx context.Context, c *http.Client, direct, viaProxy string, pid, upPid int) (Row, error) {
	var events int
	var proxyCPU, selfDirect, selfProxy, upDirect, upProxy time.Duration
	var wDirect, wProxy []float64
	for range proxyRateTrials {
		s0, u0 := selfCPU(), loadCPU(upPid)
		r, err := rate(ctx, c, direct)
		if err != nil {
			return Row{}, err
		}
		selfDirect += selfCPU() - s0
		upDirect += loadCPU(upPid) - u0
		wDirect = append(wDirect, r)
		c0, s0, u0 := loadCPU(pid), selfCPU(), loadCPU(upPid)
		r, err = rate(ctx, c, viaProxy)
		if err != nil {
			return Row{}, err
		}
		proxyCPU += loadCPU(pid) - c0
		selfProxy += selfCPU() - s0
		upProxy += loadCPU(upPid) - u0
		wProxy = append(wProxy, r)
		events += proxyRateEvents
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(events) }
	return Row{
		Figure: "proxy CPU per SSE event, against a direct connection",
		Value: fmt.Sprintf("%.2f µs of the proxy process per event; the whole path per event: direct %.2f µs (upstream %.2f + client %.2f), via the proxy %.2f µs (upstream %.2f + proxy %.2f + client %.2f); throughput proxy %.0f/s, direct %.0f/s",
			per(proxyCPU), per(upDirect+selfDirect), per(upDirect), per(selfDirect),
			per(upProxy+proxyCPU+selfProxy), per(upProxy), per(proxyCPU), per(selfProxy), median(wProxy), median(wDirect)),
		Method: fmt.Sprintf("%d alternating trials of %d chat chunks of %d B per path, upstream, proxy and client in three processes, the upstream flushing each chunk, the client reading to [DONE]; utime+stime of each process over its path's trials (/proc/PID/stat in 1/100 s ticks for upstream and proxy, getrusage for the client) / events relayed; throughput, a median, depends on how the proxy batches writes and is no efficiency figure",
			proxyRateTrials, proxyRateEvents, len(fmt.Sprintf("data: "+benchChunk+"\n\n", proxyRateEvents/2))),
	}, nil
}

// proxyProc is a running child process of the bench that said "ready
// ADDR": a proxy (proxyChild) or the upstream (upstreamChild).
type proxyProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	addr  string // where it listens
}

// startProxyChild starts a proxy child with args and extra environment,
// and waits for it to listen.
func startProxyChild(ctx context.Context, env []string, args ...string) (*proxyProc, error) {
	return startChild(ctx, "proxy", env, args...)
}

// startChild starts the bench's child name with args and extra
// environment (startPiped), and waits for it to say "ready ADDR"; a child
// that does not is stopped.
func startChild(ctx context.Context, name string, env []string, args ...string) (*proxyProc, error) {
	cmd, stdin, stdout, err := startPiped(ctx, name, env, args...)
	if err != nil {
		return nil, err
	}
	pc := &proxyProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	line, err := pc.out.ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ready ")
	if err != nil || !ok {
		pc.stop()
		return nil, fmt.Errorf("%s child: got %q, %v, want ready ADDR", name, line, err)
	}
	pc.addr = addr
	return pc, nil
}

// stop closes the child's stdin, which ends it, and waits for it.
func (pc *proxyProc) stop() {
	pc.stdin.Close()
	pc.cmd.Wait()
}

// idleMemory opens proxyIdleStreams idle streams for model through the
// proxy child at viaProxy and returns the memory row, the caller to set its
// Figure; the value judges RSS against the 50 MB target when target is
// set. idle, called once the streams are open, says what the streams go
// through and what state the baseline RSS was read in.
func (up *benchUpstream) idleMemory(ctx context.Context, pc *proxyProc, c *http.Client, viaProxy, model string, target bool, idle func() string) (Row, error) {
	base, err := rss(pc.cmd.Process.Pid)
	if err != nil {
		return Row{}, err
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
		r, err := openModelStream(sctx, c, viaProxy, "idle", model)
		if err != nil {
			return Row{}, err
		}
		resps = append(resps, r)
	}
	up.idle.Wait()
	time.Sleep(500 * time.Millisecond) // let the proxy's allocations settle before reading RSS
	held, err := rss(pc.cmd.Process.Pid)
	if err != nil {
		return Row{}, err
	}
	pss, uss, err := rollup(pc.cmd.Process.Pid)
	if err != nil {
		return Row{}, err
	}
	if _, err := io.WriteString(pc.stdin, "mem\n"); err != nil {
		return Row{}, err
	}
	line, err := pc.out.ReadString('\n')
	var heap, stack, sys, gs int
	if _, serr := fmt.Sscanf(line, "mem %d %d %d %d", &heap, &stack, &sys, &gs); err != nil || serr != nil {
		return Row{}, fmt.Errorf("proxy child: got %q, %v, %v, want mem figures", line, err, serr)
	}
	verdict := ""
	if target {
		verdict = atMost(float64(held)/1024, 50, " MB") + "; "
	}
	return Row{
		Value: fmt.Sprintf("RSS %.1f MB (%s%.1f MB above idle), PSS %.1f MB, USS %.1f MB; Go heap in use %.1f MB, goroutine stacks %.1f MB",
			float64(held)/1024, verdict, float64(held-base)/1024, float64(pss)/1024, float64(uss)/1024, float64(heap)/1e6, float64(stack)/1e6),
		Method: fmt.Sprintf("VmRSS of the proxy process (/proc/PID/status) with every stream open through it, first event relayed, upstream silent, then Pss and Private_* (USS) of /proc/PID/smaps_rollup (the binary's pages are shared with the bench's own process), read before the runtime figures (runtime.MemStats HeapInuse, StackInuse after runtime.GC); %d goroutines (%.1f per stream); %s: %.1f MB RSS",
			gs, float64(gs)/proxyIdleStreams, idle(), float64(base)/1024),
	}, nil
}

// rollup reads the PSS and the USS (Private_Clean + Private_Dirty), in
// kB, of pid from /proc/PID/smaps_rollup.
func rollup(pid int) (pss, uss int, err error) {
	m, err := procKB(pid, "smaps_rollup")
	if err != nil {
		return 0, 0, err
	}
	if m["Pss"] == 0 {
		return 0, 0, errors.New("no Pss line in /proc/PID/smaps_rollup")
	}
	return m["Pss"], m["Private_Clean"] + m["Private_Dirty"], nil
}

// idleTLS measures idle streams to a provider served over HTTPS in a fresh
// proxy child, which trusts the upstream's certificate through
// SSL_CERT_FILE. With h2 the provider offers h2 and http/1.1 by ALPN, as
// cloud providers do (the target row); without, http/1.1 alone.
func (up *benchUpstream) idleTLS(ctx context.Context, httpAddr string, h2 bool) (Row, error) {
	srv := httptest.NewUnstartedServer(up)
	var conns atomic.Int32 // connections the provider accepted
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	defer srv.Close()
	dir, err := os.MkdirTemp("", "hermes-bench-")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(dir)
	certFile := filepath.Join(dir, "upstream.pem")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(certFile, cert, 0o600); err != nil {
		return Row{}, err
	}
	pc, err := startProxyChild(ctx, []string{"SSL_CERT_FILE=" + certFile}, httpAddr, srv.Listener.Addr().String())
	if err != nil {
		return Row{}, err
	}
	defer pc.stop()
	tr := &http.Transport{MaxIdleConnsPerHost: proxyIdleStreams, DisableCompression: true}
	defer tr.CloseIdleConnections()
	offers := "h2 and http/1.1 (as cloud providers do)"
	if !h2 {
		offers = "http/1.1 alone"
	}
	row, err := up.idleMemory(ctx, pc, &http.Client{Transport: tr}, "http://"+pc.addr, "t", h2, func() string {
		return fmt.Sprintf("provider over TLS offering %s by ALPN: %d upstream connections for the %d streams; fresh proxy before any call", offers, conns.Load(), proxyIdleStreams)
	})
	if err != nil {
		return Row{}, err
	}
	row.Figure = fmt.Sprintf("proxy memory with %d idle HTTPS streams", proxyIdleStreams)
	if !h2 {
		// Not the target row: a provider without h2 costs a TLS
		// connection per stream.
		row.Figure += ", provider without h2 (HTTP/1.1)"
	}
	return row, nil
}

func median(xs []float64) float64 {
	return slices.Sorted(slices.Values(xs))[len(xs)/2]
}

// rss reads VmRSS (kB) of pid.
func rss(pid int) (int, error) { return procValue(pid, "status", "VmRSS") }

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
