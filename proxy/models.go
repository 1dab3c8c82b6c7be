package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hermes-units/hermes/providers"
)

// GET /v1/models lists the configured models (providers.<id>.models) and
// what each provider's own GET {base_url}/models answers, as PROVIDER/MODEL
// (the name that routes to that provider and model, see providers.Route).
// Clients that pick a model from the list (most OpenAI SDK front ends) thus
// see a provider's models without each being configured.
//
// The providers are asked when Serve starts and again on every
// SetProviders (a reload), never on a client's request: a listing runs on a
// goroutine of Serve's, bounded by modelsTimeout per provider, and its
// answer is kept until the next. A request that comes while a listing runs
// waits for it (at most modelsTimeout). A provider that cannot be asked, or
// whose answer is not a model list, contributes only its configured models;
// it is logged once per listing, and the client sees no error.
//
// What a provider can make the proxy hold is bounded: maxModelsBody bytes
// of answer, maxModelIDs ids of at most maxModelID bytes each.
const (
	// defaultModelsTimeout bounds one provider's answer, connection
	// included.
	defaultModelsTimeout = 10 * time.Second
	maxModelsBody        = 4 << 20
	maxModelIDs          = 4096
	maxModelID           = 256
)

// errNotModelList: a provider's GET /models answer is not an OpenAI-style
// model list.
var errNotModelList = errors.New("not a model list")

// listedModel is one model a provider's GET /models named.
type listedModel struct {
	id      string
	created int64
}

// catalog is the latest listing of the providers' own models. Serve starts
// and stops it; SetProviders replaces the listing while it runs.
type catalog struct {
	mu sync.Mutex
	// base is Serve's context while it serves, nil otherwise: listings
	// run under it. guarded by mu
	base context.Context
	// latest is the listing of the set in force; nil before Serve first
	// started one. guarded by mu
	latest *listing
	// wg counts the listings' goroutines; Serve waits for them.
	wg sync.WaitGroup
}

// listing is one round of GET /models to every provider of set.
type listing struct {
	set    *providers.Set
	cancel context.CancelFunc // ends the round: superseded, or Serve returned
	done   chan struct{}      // closed once byProvider is complete
	// byProvider holds each provider's answer, by provider id; a provider
	// that failed has none. Written before done is closed, read-only after.
	byProvider map[string][]listedModel
}

// listModelsLocked starts a listing of set (when serving), superseding
// the one in flight. The caller holds p.catalog.mu.
func (p *Proxy) listModelsLocked(set *providers.Set) {
	c := &p.catalog
	if c.latest != nil {
		c.latest.cancel()
	}
	if c.base == nil {
		c.latest = nil
		return
	}
	ctx, cancel := context.WithCancel(c.base)
	l := &listing{set: set, cancel: cancel, done: make(chan struct{}), byProvider: map[string][]listedModel{}}
	c.latest = l
	c.wg.Go(func() {
		defer cancel()
		defer close(l.done)
		l.byProvider = p.listAll(ctx, set)
	})
}

// startCatalog begins listing the providers under base (Serve's context);
// stopCatalog ends the listing in flight and waits for it.
func (p *Proxy) startCatalog(base context.Context) {
	p.catalog.mu.Lock()
	defer p.catalog.mu.Unlock()
	p.catalog.base = base
	p.listModelsLocked(p.set.Load())
}

func (p *Proxy) stopCatalog() {
	p.catalog.mu.Lock()
	p.catalog.base = nil
	if l := p.catalog.latest; l != nil {
		l.cancel()
	}
	p.catalog.mu.Unlock()
	p.catalog.wg.Wait()
}

// listed returns the set in force and what its providers listed, once the
// listing of that set is complete; nil when no listing ran (the proxy is
// not serving) or ctx ended first. A listing superseded while waiting is
// followed by its successor.
func (p *Proxy) listed(ctx context.Context) (*providers.Set, map[string][]listedModel) {
	for {
		p.catalog.mu.Lock()
		l := p.catalog.latest
		p.catalog.mu.Unlock()
		if l == nil {
			return p.set.Load(), nil
		}
		select {
		case <-l.done:
		case <-ctx.Done():
			return l.set, nil
		}
		p.catalog.mu.Lock()
		same := p.catalog.latest == l
		p.catalog.mu.Unlock()
		if same {
			return l.set, l.byProvider
		}
	}
}

// listAll asks every provider of set at once and returns their lists. A
// failure is logged, unless ctx ended (a newer listing, or shutdown).
func (p *Proxy) listAll(ctx context.Context, set *providers.Set) map[string][]listedModel {
	out := map[string][]listedModel{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range set.IDs() {
		wg.Go(func() {
			models, dropped, err := p.listProvider(ctx, set, id)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				p.opts.Logf("proxy: provider %s: %v; GET /v1/models lists only its configured models until the next reload", id, err)
				return
			}
			if dropped > 0 {
				p.opts.Logf("proxy: provider %s: GET /models listed %d models more than the %d kept (or ids over %d bytes); GET /v1/models lists the first %d",
					id, dropped, maxModelIDs, maxModelID, len(models))
			}
			mu.Lock()
			out[id] = models
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// listProvider asks provider id for its models: GET {base_url}/models with
// its API key, as its calls go. dropped counts the ids not kept (over
// maxModelIDs, empty, too long, or repeated). A provider with no base_url
// has nothing to ask: nil, and no error (its calls say what is missing).
func (p *Proxy) listProvider(ctx context.Context, set *providers.Set, id string) (models []listedModel, dropped int, err error) {
	prov, err := set.Get(id)
	if err != nil || prov.BaseURL == "" {
		return nil, 0, err
	}
	key, err := set.APIKey(id, p.opts.Env)
	if err != nil {
		return nil, 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.modelsTimeout)
	defer cancel()
	url := strings.TrimRight(prov.BaseURL, "/") + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errBadBaseURL, err)
	}
	req.Header.Set("Accept", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("GET %s: no answer within %s", url, p.modelsTimeout)
		}
		return nil, 0, err // a *url.Error: it names the method and URL
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s answered %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxModelsBody+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, 0, fmt.Errorf("GET %s: no whole answer within %s", url, p.modelsTimeout)
		}
		return nil, 0, fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	if len(data) > maxModelsBody {
		return nil, 0, fmt.Errorf("GET %s: the answer is over %d MiB", url, maxModelsBody>>20)
	}
	models, dropped, err = parseModelList(data)
	if err != nil {
		return nil, 0, fmt.Errorf("GET %s: %w", url, err)
	}
	return models, dropped, nil
}

// parseModelList reads an OpenAI-style model list ({"data": [{"id": ...},
// ...]}) and keeps the first maxModelIDs distinct ids of 1 to maxModelID
// bytes; dropped counts the others.
func parseModelList(data []byte) (models []listedModel, dropped int, err error) {
	var list struct {
		Data *[]struct {
			ID      string `json:"id"`
			Created int64  `json:"created"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, 0, fmt.Errorf("%w: %w", errNotModelList, err)
	}
	if list.Data == nil {
		return nil, 0, fmt.Errorf("%w: the answer has no \"data\" array", errNotModelList)
	}
	seen := map[string]bool{}
	for _, m := range *list.Data {
		if m.ID == "" || len(m.ID) > maxModelID || seen[m.ID] || len(models) == maxModelIDs {
			dropped++
			continue
		}
		seen[m.ID] = true
		models = append(models, listedModel{id: m.ID, created: m.Created})
	}
	return models, dropped, nil
}

type modelJSON struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// models answers GET /v1/models: every provider's configured models, by
// their own name when that name routes to them, else as PROVIDER/MODEL;
// and what the provider listed itself, as PROVIDER/MODEL, unless it is a
// configured model of that provider or the name would route elsewhere.
// Sorted by id, each id once.
func (p *Proxy) models(w http.ResponseWriter, r *http.Request) {
	set, listed := p.listed(r.Context())
	if r.Context().Err() != nil {
		return // the client went away while the listing ran
	}
	byName := map[string]modelJSON{}
	add := func(m modelJSON) {
		if _, ok := byName[m.ID]; !ok {
			byName[m.ID] = m
		}
	}
	for _, id := range set.IDs() {
		prov, err := set.Get(id)
		if err != nil {
			continue
		}
		for k := range prov.Models {
			name := k
			if rt, err := set.Route(k); err != nil || rt.Provider != id {
				name = id + "/" + k
			}
			add(modelJSON{ID: name, Object: "model", OwnedBy: id})
		}
		for _, m := range listed[id] {
			configured := false
			for k := range prov.Models {
				configured = configured || strings.EqualFold(k, m.id)
			}
			name := id + "/" + m.id
			if rt, err := set.Route(name); configured || err != nil || rt.Provider != id || rt.Model != m.id {
				continue
			}
			add(modelJSON{ID: name, Object: "model", Created: m.created, OwnedBy: id})
		}
	}
	data := make([]modelJSON, 0, len(byName))
	for _, m := range byName {
		data = append(data, m)
	}
	slices.SortFunc(data, func(a, b modelJSON) int { return cmp.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
