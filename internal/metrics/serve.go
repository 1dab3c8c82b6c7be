package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hermes-units/hermes/units"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// ErrNotLoopback: metrics.listen is not a loopback address.
var ErrNotLoopback = errors.New("metrics listen address is not loopback")

// ErrToken: metrics.token_file cannot be used.
var ErrToken = errors.New("metrics bearer token unusable")

// CheckListen returns an error wrapping ErrNotLoopback unless addr's host
// is a loopback IP or "localhost", or remote (metrics.remote) allows any.
func CheckListen(addr string, remote bool) error {
	return units.CheckListen("metrics.listen", addr, remote, ErrNotLoopback,
		"metrics listen on loopback unless metrics.remote is true (a scraper elsewhere: set it, with metrics.token_file); else set metrics.listen to 127.0.0.1:PORT")
}

// ReadToken reads a bearer token file: it must be a regular file that
// other users cannot read, holding one non-empty line.
func ReadToken(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: metrics.token_file: %w", ErrToken, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%w: metrics.token_file %s is not a regular file", ErrToken, path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w: metrics.token_file %s is readable by others (mode %04o): chmod 600 it", ErrToken, path, fi.Mode().Perm())
	}
	if fi.Size() > 4096 {
		return "", fmt.Errorf("%w: metrics.token_file %s is over 4 KiB; it should hold one token", ErrToken, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: metrics.token_file: %w", ErrToken, err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("%w: metrics.token_file %s must hold one non-empty line", ErrToken, path)
	}
	return tok, nil
}

// Handler serves the metrics on GET /metrics. Unless remote, a request
// whose Host is not a loopback name or address is refused (421): a web
// page the user visits cannot read the metrics through a DNS name rebound
// to 127.0.0.1 (remote: the endpoint is served to other hosts on purpose,
// and scrapers name it by the pod's address). With a token, a request
// must send "Authorization: Bearer TOKEN" (else 401).
func (m *Metrics) Handler(token string, remote bool) http.Handler {
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		switch {
		case !remote && !units.LoopbackHost(strings.Trim(host, "[]")):
			http.Error(w, fmt.Sprintf("hermesd metrics: Host %q is not a loopback name or address; scrape http://127.0.0.1:PORT/metrics", r.Host), http.StatusMisdirectedRequest)
		case r.URL.Path != "/metrics":
			http.Error(w, "hermesd metrics: only /metrics is served", http.StatusNotFound)
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			http.Error(w, "hermesd metrics: use GET /metrics", http.StatusMethodNotAllowed)
		case token != "" && !bearer(r, token):
			w.Header().Set("WWW-Authenticate", `Bearer realm="hermesd metrics"`)
			http.Error(w, "hermesd metrics: missing or wrong bearer token (metrics.token_file)", http.StatusUnauthorized)
		default:
			prom.ServeHTTP(w, r)
		}
	})
}

func bearer(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

// Listen binds addr, which must be loopback unless remote.
func Listen(ctx context.Context, addr string, remote bool) (net.Listener, error) {
	if err := CheckListen(addr, remote); err != nil {
		return nil, err
	}
	return units.ListenTCP(ctx, "metrics", "metrics.listen", addr)
}

// Serve serves h on ln until ctx ends, then closes it (scrapes in flight
// get up to 2 s). logf receives the server's errors.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, logf func(string, ...any)) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          log.New(logWriter(logf), "metrics: ", 0),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: serve %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	<-errc
	return nil
}

type logWriter func(string, ...any)

func (f logWriter) Write(b []byte) (int, error) {
	f("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
