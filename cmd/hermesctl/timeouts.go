package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/hermes-units/hermes/providers"
	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
	"github.com/spf13/cobra"
)

// newTimeoutsCmd groups the timeout-stack commands (SPEC §10).
func newTimeoutsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "timeouts",
		Short: "Inspect the timeout stack of LLM provider calls",
	}
	cmd.AddCommand(newTimeoutsExplainCmd(g))
	return cmd
}

// explainOptions are the flags of timeouts explain, and where it prints.
type explainOptions struct {
	clientOptions
	provider, model, baseURL, api, budget string
	tokens                                int
	stream, noStream, thinking            bool
	streamGiven                           bool // --stream was on the command line
}

// newTimeoutsExplainCmd prints, offline, every layer's timeout for one call
// and the chain of rules that produced it, computed by the same code the
// provider proxy uses (package providers, then timeouts.Resolve).
func newTimeoutsExplainCmd(g *globals) *cobra.Command {
	opts := &explainOptions{clientOptions: clientOptions{g: g}}
	cmd := &cobra.Command{
		Use:   "explain --model M [--provider ID] [flags]",
		Short: "Show each timeout layer of a provider call and where its value came from",
		Long: `Show each layer of the timeout stack (socket read, stale stream, stale
non-stream, first event, API call, post-terminal drain) for one call, with
its value and the chain that produced it: default → context tier → model
floor → budget cap → hard cap, or the explicit setting that won. Some
floors cover thinking calls only (the 240 s of Claude Opus): --thinking
describes a call whose request enables thinking.

Offline: reads the main config (--config) and the provider: blocks of the
units directory (--units); the environment knobs HERMES_STREAM_STALE_TIMEOUT
and HERMES_STREAM_STALE_GIVEUP are read from this shell. Without --provider
the model is routed as the proxy would (a provider listing it, or
PROVIDER/MODEL). With --base-url, a provider that is not configured can be
explored (or a configured one's URL overridden).`,
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.provider, "provider", "", "provider id (providers.<id> in hermes.yaml, or a unit's provider: id)")
	fl.StringVar(&opts.model, "model", "", "model name as a client sends it, e.g. openai/o3 (required)")
	fl.IntVar(&opts.tokens, "tokens", 0, "estimated context tokens (characters of messages+tools / 4)")
	fl.BoolVar(&opts.stream, "stream", true, "a streaming call (the default)")
	fl.BoolVar(&opts.noStream, "no-stream", false, "a non-streaming call")
	fl.BoolVar(&opts.thinking, "thinking", false, "a call whose request enables thinking (thinking, reasoning_effort or reasoning); a model id naming a thinking variant is one anyway")
	fl.StringVar(&opts.api, "api", "chat", "provider API: chat or responses")
	fl.StringVar(&opts.budget, "budget-remaining", "", "run budget left, in seconds or as 5m; 0 is a spent budget (default: agent.run_budget_seconds, nothing spent)")
	fl.StringVar(&opts.baseURL, "base-url", "", "base URL of the provider, to explore one that is not configured")
	_ = cmd.MarkFlagRequired("model")
	return opts.command(cmd, func(context.Context, []string) error {
		opts.streamGiven = fl.Changed("stream")
		return runExplain(opts)
	})
}

// runExplain prints the plan of the call f describes (explain): each
// layer's value and where it came from, or the plan as JSON.
func runExplain(f *explainOptions) error {
	plan, err := explain(f)
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(f.out)
		enc.SetIndent("", "  ")
		return enc.Encode(plan)
	}
	_, err = fmt.Fprint(f.out, plan.String())
	return err
}

// explain is the plan of the call f describes, computed as the provider
// proxy computes it (package providers, then timeouts.Resolve).
func explain(f *explainOptions) (timeouts.Plan, error) {
	var zero timeouts.Plan
	if f.streamGiven && f.noStream {
		return zero, errors.New("--stream and --no-stream contradict each other: give one")
	}
	api, err := timeouts.ParseAPI(f.api)
	if err != nil {
		return zero, fmt.Errorf("--api: %w", err)
	}
	if f.tokens < 0 {
		return zero, fmt.Errorf("--tokens %d: want a count ≥ 0", f.tokens)
	}
	call := providers.Call{Model: f.model, Stream: !f.noStream, API: api, Tokens: f.tokens, Thinking: f.thinking, Env: os.LookupEnv}
	if f.budget != "" {
		d, err := timeouts.ParseRemaining(f.budget)
		if err != nil {
			return zero, fmt.Errorf("--budget-remaining: %w", err)
		}
		call.Run = timeouts.Left(d)
	}

	set, err := loadProviders(f.g, f.errOut)
	if err != nil {
		return zero, err
	}
	id := f.provider
	if f.baseURL != "" {
		if id == "" {
			return zero, errors.New("--base-url needs --provider ID to name the provider explored")
		}
		p, err := set.Get(id)
		if err != nil {
			p = units.Provider{ID: id}
		}
		p.BaseURL = f.baseURL
		set = set.With(p, "--base-url provider "+id)
	}
	if id == "" {
		r, err := set.Route(f.model)
		if err != nil {
			return zero, fmt.Errorf("%w; or name it with --provider ID", err)
		}
		id, call.Model = r.Provider, r.Model
	}
	plan, err := set.Plan(id, call)
	if _, ok := errors.AsType[*providers.UnknownProviderError](err); ok {
		return zero, fmt.Errorf("%w; to explore one that is not configured, add --base-url URL", err)
	}
	return plan, err
}

// loadProviders reads the providers from --config and from the unit files of
// --units that declare a provider: block. A missing config file or units
// directory is fine (nothing configured); a broken config is an error; a
// broken unit file is skipped with a warning, since explain is about
// providers and `hermesctl validate` is the tool for unit errors.
func loadProviders(g *globals, errOut io.Writer) (*providers.Set, error) {
	cfg, err := units.LoadConfig(g.Config)
	if err != nil {
		return nil, err
	}
	var specs []*units.Spec
	if g.Units != "" {
		if _, statErr := os.Stat(g.Units); statErr == nil {
			dir, err := units.LoadDir(g.Units)
			if dir != nil {
				specs = slices.AppendSeq(specs, maps.Values(dir.Units))
				if n := len(dir.Failed); n > 0 {
					fmt.Fprintf(errOut, "warning: %d unit file(s) in %s skipped (see hermesctl validate)\n", n, g.Units)
				}
			} else if err != nil {
				fmt.Fprintf(errOut, "warning: units directory %s not read: %v\n", g.Units, err)
			}
		} else if !errors.Is(statErr, fs.ErrNotExist) {
			return nil, fmt.Errorf("units directory: %w", statErr)
		}
	}
	return providers.New(cfg, specs...)
}
