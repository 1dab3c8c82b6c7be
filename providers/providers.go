// Package providers turns the configured LLM providers (hermes.yaml's
// providers.<id> and agent.*, and units' provider: blocks) into
// timeouts.Inputs, routes a model name to its provider, and finds a
// provider's API key. The provider proxy and `hermesctl timeouts explain`
// both go through it, so a job's call and a gateway call with the same
// request compute the same timeouts.
package providers

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hermes-units/hermes/timeouts"
	"github.com/hermes-units/hermes/units"
)

var (
	// ErrUnknownProvider: no provider has that id. See *UnknownProviderError.
	ErrUnknownProvider = errors.New("unknown provider")
	// ErrUnknownModel: no provider serves that model name.
	ErrUnknownModel = errors.New("no provider serves this model")
	// ErrDuplicate: two blocks declare the same provider id.
	ErrDuplicate = errors.New("provider declared twice")
	// ErrNoAPIKey: the provider's api_key_env names an unset variable.
	ErrNoAPIKey = errors.New("API key not set")
)

// UnknownProviderError names the id asked for and the ids configured.
type UnknownProviderError struct {
	ID    string
	Known []string // sorted
	File  string   // the hermes.yaml read, "" when none
}

func (e *UnknownProviderError) Error() string {
	where := "no hermes.yaml was found"
	if e.File != "" {
		where = "in " + e.File
	}
	known := "none are configured"
	if len(e.Known) > 0 {
		known = "configured: " + strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("unknown provider %q (%s; %s): name a configured one, or add it under providers: in hermes.yaml", e.ID, known, where)
}

// Unwrap returns ErrUnknownProvider.
func (e *UnknownProviderError) Unwrap() error { return ErrUnknownProvider }

// Set is the providers a process knows: built once from the loaded config
// (and units), then read-only, so it is safe for concurrent use.
type Set struct {
	file  string
	agent units.Agent
	byID  map[string]entry
}

type entry struct {
	p      units.Provider
	source string // provenance prefix: "providers.openai", "llama.yaml provider"
}

// New builds the set from hermes.yaml's providers and the provider: blocks of
// specs (units that serve an LLM endpoint; specs without one are skipped). A
// unit's provider id that is already taken is an error wrapping
// ErrDuplicate naming both places. cfg nil means no config file.
func New(cfg *units.Config, specs ...*units.Spec) (*Set, error) {
	s := &Set{byID: map[string]entry{}}
	if cfg != nil {
		s.file, s.agent = cfg.File, cfg.Agent
		for id, p := range cfg.Providers {
			p.ID = id
			s.byID[id] = entry{p: p, source: "providers." + id}
		}
	}
	for _, spec := range specs {
		if spec == nil || spec.Provider == nil {
			continue
		}
		src := "unit " + spec.Name + " provider"
		if spec.File != "" {
			src = filepath.Base(spec.File) + " provider"
		}
		if err := s.Add(*spec.Provider, src); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Add declares one more provider; source names where it comes from, for
// provenance chains ("" means providers.<id>). It is meant for building a
// Set (New, or `explain --base-url`), before the Set is shared.
func (s *Set) Add(p units.Provider, source string) error {
	if p.ID == "" {
		return fmt.Errorf("%w: a provider needs an id", timeouts.ErrInvalid)
	}
	if old, ok := s.byID[p.ID]; ok {
		return fmt.Errorf("%w: %q in %s and in %s: rename one of them", ErrDuplicate, p.ID, old.source, orProviders(source, p.ID))
	}
	s.byID[p.ID] = entry{p: p, source: orProviders(source, p.ID)}
	return nil
}

func orProviders(source, id string) string {
	if source == "" {
		return "providers." + id
	}
	return source
}

// IDs returns the provider ids, sorted.
func (s *Set) IDs() []string {
	ids := make([]string, 0, len(s.byID))
	for id := range s.byID {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Get returns the provider with that id, or an *UnknownProviderError.
func (s *Set) Get(id string) (units.Provider, error) {
	e, ok := s.byID[id]
	if !ok {
		return units.Provider{}, &UnknownProviderError{ID: id, Known: s.IDs(), File: s.file}
	}
	return e.p, nil
}

// Route is where a model name goes: a provider id and the model name to
// send to it.
type Route struct {
	Provider string
	Model    string
}

// Route finds the provider of a model name, in this order:
//
//  1. a provider whose models: lists the name (case-insensitive), so an
//     aggregator listing "openai/o3" keeps the whole name;
//  2. "ID/MODEL" where ID is a provider id: MODEL goes to ID;
//  3. the only provider, when exactly one is configured.
//
// A name listed by several providers, or matched by none, is an error
// wrapping ErrUnknownModel that names the candidates.
func (s *Set) Route(model string) (Route, error) {
	var listed []Route
	for _, id := range s.IDs() {
		for key := range s.byID[id].p.Models {
			if strings.EqualFold(key, model) {
				listed = append(listed, Route{Provider: id, Model: key})
				break
			}
		}
	}
	switch len(listed) {
	case 1:
		return listed[0], nil
	case 0:
	default:
		ids := make([]string, len(listed))
		for i, r := range listed {
			ids[i] = r.Provider
		}
		return Route{}, fmt.Errorf("%w: model %q is listed by providers %s: ask for it as PROVIDER/%s", ErrUnknownModel, model, strings.Join(ids, ", "), model)
	}
	if id, rest, ok := strings.Cut(model, "/"); ok && rest != "" {
		if _, known := s.byID[id]; known {
			return Route{Provider: id, Model: rest}, nil
		}
	}
	if ids := s.IDs(); len(ids) == 1 {
		return Route{Provider: ids[0], Model: model}, nil
	}
	return Route{}, fmt.Errorf("%w: model %q (providers: %s): ask for PROVIDER/MODEL, or list the model under providers.<id>.models", ErrUnknownModel, model, strings.Join(s.IDs(), ", "))
}

// Call describes one model call, beside its provider.
type Call struct {
	Model  string
	Stream bool
	API    timeouts.API
	Tokens int
	// Thinking: the request enables thinking (see timeouts.Inputs.Thinking).
	Thinking bool
	// Run is the budget of the run making the call (a job's, or the
	// agent's). Zero Total falls back to agent.run_budget_seconds with
	// nothing spent: what the first call of a run sees.
	Run timeouts.RunBudget
	// Env looks up the timeout knobs (os.LookupEnv at the edge).
	Env func(string) (string, bool)
}

// Inputs builds the resolver's inputs for a call to provider id.
func (s *Set) Inputs(id string, c Call) (timeouts.Inputs, error) {
	e, ok := s.byID[id]
	if !ok {
		return timeouts.Inputs{}, &UnknownProviderError{ID: id, Known: s.IDs(), File: s.file}
	}
	run := c.Run
	if run.Total <= 0 && s.agent.RunBudget > 0 {
		run = timeouts.RunBudget{Total: s.agent.RunBudget}
	}
	return timeouts.Inputs{
		Provider: Convert(e.p, e.source),
		Model:    c.Model,
		Stream:   c.Stream,
		API:      c.API,
		Tokens:   c.Tokens,
		Thinking: c.Thinking,
		Run:      run,
		Agent:    Agent(s.agent),
		Env:      c.Env,
	}, nil
}

// Plan resolves the timeouts of a call to provider id: Inputs, then
// timeouts.Resolve.
func (s *Set) Plan(id string, c Call) (timeouts.Plan, error) {
	in, err := s.Inputs(id, c)
	if err != nil {
		return timeouts.Plan{}, err
	}
	return timeouts.Resolve(in), nil
}

// Convert maps a configured provider block to the resolver's Provider;
// source is the provenance prefix ("" means providers.<id>).
func Convert(p units.Provider, source string) timeouts.Provider {
	out := timeouts.Provider{
		ID:           p.ID,
		BaseURL:      p.BaseURL,
		Source:       orProviders(source, p.ID),
		StaleTimeout: p.StaleTimeout,
	}
	if len(p.Models) > 0 {
		out.Models = make(map[string]timeouts.Model, len(p.Models))
		for k, m := range p.Models {
			out.Models[k] = timeouts.Model{StaleTimeout: m.StaleTimeout}
		}
	}
	for _, t := range p.Tiers {
		out.Tiers = append(out.Tiers, timeouts.Tier{AboveTokens: t.AboveTokens, Timeout: t.Timeout})
	}
	for _, f := range p.Floors {
		out.Floors = append(out.Floors, timeouts.Floor{Slug: f.Slug, Timeout: f.Timeout})
	}
	return out
}

// Agent maps agent.* to the resolver's Agent.
func Agent(a units.Agent) timeouts.Agent {
	return timeouts.Agent{
		LocalStreamStaleTimeout: a.LocalStreamStaleTimeout,
		StaleTimeoutHardCap:     a.StaleTimeoutHardCap,
		StreamDrainTimeout:      a.StreamDrainTimeout,
	}
}

// MissingKeyError: the provider's api_key_env names a variable that is not
// set in the environment.
type MissingKeyError struct {
	Provider string
	Env      string
	Source   string
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("provider %s: the API key variable %s is not set: export it in hermesd's environment, or change %s.api_key_env", e.Provider, e.Env, e.Source)
}

// Unwrap returns ErrNoAPIKey.
func (e *MissingKeyError) Unwrap() error { return ErrNoAPIKey }

// KeyFileError: the provider's api_key_file cannot be read, or is empty.
type KeyFileError struct {
	Provider string
	File     string
	Source   string
	Err      error // nil: the file is empty
}

func (e *KeyFileError) Error() string {
	why := "is empty"
	if e.Err != nil {
		why = "cannot be read: " + e.Err.Error()
	}
	return fmt.Sprintf("provider %s: the API key file %s %s: put the key in it (a mounted Secret's key), or change %s.api_key_file", e.Provider, e.File, why, e.Source)
}

// Unwrap returns ErrNoAPIKey.
func (e *KeyFileError) Unwrap() error { return ErrNoAPIKey }

// maxKeyFile bounds what is read of an api_key_file: a key, not a file.
const maxKeyFile = 64 << 10

// readKeyFile reads an api_key_file at each call: a Secret the kubelet
// rotates in its volume (a new ..data) is taken at the next call.
func readKeyFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	return strings.TrimSpace(string(b)), err
}

// APIKey returns the API key of provider id: read from its api_key_file,
// or through lookup from the variable its api_key_env names. A provider
// with neither (a local server) has no key: "" and nil. A named but unset
// or empty variable is a *MissingKeyError; a file that cannot be read or
// is empty, a *KeyFileError.
func (s *Set) APIKey(id string, lookup func(string) (string, bool)) (string, error) {
	e, ok := s.byID[id]
	if !ok {
		return "", &UnknownProviderError{ID: id, Known: s.IDs(), File: s.file}
	}
	if e.p.APIKeyFile != "" {
		key, err := readKeyFile(e.p.APIKeyFile)
		if err != nil || key == "" {
			if pe, ok := errors.AsType[*fs.PathError](err); ok {
				err = pe.Err
			}
			return "", &KeyFileError{Provider: id, File: e.p.APIKeyFile, Source: e.source, Err: err}
		}
		return key, nil
	}
	if e.p.APIKeyEnv == "" {
		return "", nil
	}
	if lookup != nil {
		if v, ok := lookup(e.p.APIKeyEnv); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), nil
		}
	}
	return "", &MissingKeyError{Provider: id, Env: e.p.APIKeyEnv, Source: e.source}
}

// With returns a copy of s in which p replaces the provider of the same id,
// or joins the set if the id is new. The replaced provider's provenance is
// kept; a new one takes source ("" means providers.<id>). s is unchanged.
func (s *Set) With(p units.Provider, source string) *Set {
	out := &Set{file: s.file, agent: s.agent, byID: make(map[string]entry, len(s.byID)+1)}
	maps.Copy(out.byID, s.byID)
	if old, ok := s.byID[p.ID]; ok {
		source = old.source
	}
	out.byID[p.ID] = entry{p: p, source: orProviders(source, p.ID)}
	return out
}
