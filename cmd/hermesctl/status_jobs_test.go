package main

import (
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/control"
	"github.com/hermes-units/hermes/timeouts"
)

func TestStatusJobsAndProxy(t *testing.T) {
	next := time.Date(2030, 1, 2, 3, 5, 0, 0, time.Local)
	tests := []struct {
		name string
		st   control.Status
		want []string // lines, each must appear
		not  []string
	}{
		{"neither", control.Status{Units: []control.Unit{{Name: "web", State: "running"}}}, nil, []string{"jobs:", "proxy:"}},
		{"job and proxy", control.Status{
			Units: []control.Unit{{Name: "nightly", State: "failed", Job: &control.Job{
				Schedule: "*/5 * * * *", Next: next, LastRun: "2030-01-02T03:00:00Z", Result: "budget exceeded", Skipped: 1,
			}}},
			Proxy: &control.Proxy{Listen: "127.0.0.1:7411", Providers: []string{"local", "openai"}, Connections: 3, Refused: 12, BodyBytes: 2 << 20,
				Limits: control.ProxyLimits{MaxConnections: 512, MaxRequestBody: 64 << 20, MaxBodiesInFlight: 256 << 20,
					ReadHeaderTimeout: 30 * time.Second, BodyReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute},
				Breakers: []control.Breaker{
					{Session: "run nightly-1 → local", Provider: "local", Model: "qwq-32b", Streak: 5, ProviderStreak: 5, Threshold: 5, Tripped: true, TrippedBy: timeouts.ScopeModel},
					{Session: "token sha256:0a1b2c3d4e5f → openai", Provider: "openai", Model: "gpt-4o", Streak: 1, ProviderStreak: 5, Threshold: 5, Tripped: true, TrippedBy: timeouts.ScopeProvider},
				}},
		}, []string{
			"jobs:",
			"nightly  */5 * * * *  " + next.Format(time.RFC3339) + "  2030-01-02T03:00:00Z  budget exceeded  1",
			"proxy:      listening on 127.0.0.1:7411, providers local, openai, 2 sessions",
			"            3/512 connections (12 refused), 2MiB of 256MiB in request bodies, bodies up to 64MiB; timeouts: headers 30s, body 1m0s, idle 2m0s",
			"SESSION                             PROVIDER  MODEL    MODEL STREAK  PROVIDER STREAK  BREAKER",
			"run nightly-1 → local               local     qwq-32b  5/5           5/5              tripped by model streak",
			"token sha256:0a1b2c3d4e5f → openai  openai    gpt-4o   1/5           5/5              tripped by provider streak",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeStatus(&b, tt.st, look{now: time.Now()})
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("status output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("status output has %q, want none:\n%s", w, out)
				}
			}
		})
	}
}
