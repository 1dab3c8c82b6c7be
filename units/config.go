package units

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultListen is the provider proxy's default address (gateway.listen).
const DefaultListen = "127.0.0.1:7411"

// LoopbackHost reports whether host, of a listen address (gateway.listen,
// metrics.listen, probes.listen), is "localhost" or a loopback IP: what
// those keys take unless remote allows any.
func LoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return strings.EqualFold(host, "localhost") || ip != nil && ip.IsLoopback()
}

// CheckListen returns nil when addr, the host:port of what (a key, or
// who listens), may be listened on: its host is loopback (LoopbackHost),
// or remote allows any. Else its error wraps notLoopback and says fix,
// what to do.
func CheckListen(what, addr string, remote bool, notLoopback error, fix string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s %q is not host:port: %w", what, addr, err)
	}
	if remote || LoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: %q; %s", notLoopback, addr, fix)
}

// ListenTCP binds addr, the value of key (gateway.listen,
// metrics.listen), checked by CheckListen; a bind that fails is an error
// naming both, after who.
func ListenTCP(ctx context.Context, who, key, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: listen on %s (%s): %w", who, addr, key, err)
	}
	return ln, nil
}

// DefaultConfig is the configuration used when hermes.yaml does not exist:
// built-in unit defaults, gateway.listen 127.0.0.1:7411, no providers, no
// agent settings (the timeouts package applies its own defaults to zeros).
func DefaultConfig() *Config {
	return &Config{
		Gateway: Gateway{
			Listen:            DefaultListen,
			MaxConnections:    DefaultMaxConnections,
			MaxRequestBody:    DefaultMaxRequestBody,
			MaxBodiesInFlight: DefaultMaxBodiesInFlight,
			ReadHeaderTimeout: DefaultReadHeaderTimeout,
			BodyReadTimeout:   DefaultBodyReadTimeout,
			IdleTimeout:       DefaultIdleTimeout,
		},
		Defaults:  BuiltinDefaults(),
		Providers: map[string]Provider{},
	}
}

// LoadConfig reads hermes.yaml. A missing file is not an error: it returns
// DefaultConfig() with File "" (the file is optional, SPEC §7). Any other
// problem returns Errors, each with file:line:col.
func LoadConfig(path string) (*Config, error) {
	data, err := readFile(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(path)
	return ParseConfig(path, filepath.Dir(abs), data)
}

// ParseConfig decodes hermes.yaml content read elsewhere (LoadConfig, a
// test); file names it in errors and relative paths resolve against dir.
func ParseConfig(file, dir string, data []byte) (*Config, error) {
	d := &decoder{file: file, dir: dir}
	root := d.parseDocument(data, "config")
	if root == nil {
		return nil, d.errs.err()
	}
	c := DefaultConfig()
	c.File = file
	if abs, err := filepath.Abs(file); err == nil {
		c.File = abs
	}
	configFields.decode(d, root, "", c)
	if err := d.errs.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// configFields are the keys of hermes.yaml.
var configFields = slices.Concat(lift(daemonFields, func(c *Config) *Daemon { return &c.Daemon }), keyed[*Config]{
	{"agent", block(KindBlock, agentFields, ""), func(d *decoder, c *Config, f field) { agentFields.decode(d, f.val, f.path, &c.Agent) }},
	{"providers", block(KindByID, providerFields[1:], "LLM providers by id."), func(d *decoder, c *Config, f field) { c.Providers = d.providers(f) }},
	{"gateway", block(KindBlock, gatewayFields, ""), func(d *decoder, c *Config, f field) { d.gateway(f, &c.Gateway) }},
	{"metrics", block(KindBlock, metricsFields, ""), func(d *decoder, c *Config, f field) { metricsFields.decode(d, f.val, f.path, &c.Metrics) }},
	{"probes", block(KindBlock, probesFields, ""), func(d *decoder, c *Config, f field) { probesFields.decode(d, f.val, f.path, &c.Probes) }},
	{"defaults", block(KindBlock, defaultsFields, ""), func(d *decoder, c *Config, f field) { defaultsFields.decode(d, f.val, f.path, &c.Defaults) }},
})

// daemonFields are the daemon's top-level keys of hermes.yaml, which
// LoadDaemon reads before the rest.
var daemonFields = keyed[*Daemon]{
	{"units", takes(KindNonEmpty, "Units directory (flag --units, env HERMES_UNITS)."), func(d *decoder, dm *Daemon, f field) { dm.Units = d.path(f) }},
	{"state", takes(KindNonEmpty, "State directory (flag --state, env HERMES_STATE)."), func(d *decoder, dm *Daemon, f field) { dm.State = d.path(f) }},
	{"socket", takes(KindNonEmpty, "Control socket (flag --socket, env HERMES_SOCKET)."), func(d *decoder, dm *Daemon, f field) { dm.Socket = d.path(f) }},
	{"role", oneOf(roles, "gateway re-adopts survivors; worker does not.").or(RoleGateway), func(d *decoder, dm *Daemon, f field) { dm.Role = enum(d, f, ParseRole, dm.Role) }},
}

// LoadDaemon reads the daemon keys of hermes.yaml (units, state, socket,
// role), with LoadConfig's decoder, before anything else is set up: the
// paths flags and the environment are layered over. A missing file is a
// zero Daemon. A file that cannot be read or is not YAML is an error, and
// so is a daemon key that does not decode (with the keys that did); the
// rest of the file is checked, and reported, where the whole configuration
// is loaded (LoadConfig).
func LoadDaemon(path string) (Daemon, error) {
	data, err := readFile(path, false)
	if errors.Is(err, fs.ErrNotExist) {
		return Daemon{}, nil
	}
	if err != nil {
		return Daemon{}, err
	}
	abs, _ := filepath.Abs(path)
	d := &decoder{file: path, dir: filepath.Dir(abs)}
	root := d.parseDocument(data, "config")
	if root == nil {
		return Daemon{}, d.errs.err()
	}
	fields := d.mapping(root, "", configFields.names())
	d.errs = nil // the other keys' errors are LoadConfig's to report
	var dm Daemon
	for i := range fields {
		daemonFields.one(d, &dm, &fields[i])
	}
	return dm, d.errs.err()
}

var gatewayFields = keyed[*Gateway]{
	{"listen", takes(KindListen, "Provider proxy address.").or(DefaultListen), func(d *decoder, gw *Gateway, f field) { gw.Listen = d.listen(f) }},
	{"allowed_origins", takes(KindOrigins, "Browser origins (scheme://host[:port]) allowed to call the proxy; a request with any other Origin header is refused 403. Default none."),
		func(d *decoder, gw *Gateway, f field) { gw.AllowedOrigins = d.origins(f) }},
	{"max_connections", between(1, 1<<20, // more than any descriptor limit allows
		"Client connections open at once; the next is answered 503 and closed. Lowered at start to fit the descriptor limit.").or(DefaultMaxConnections),
		func(d *decoder, gw *Gateway, f field) { gw.MaxConnections = d.count(f) }},
	{"max_request_body", takes(KindSize, "Largest request body (413 above). Default 64MiB."), func(d *decoder, gw *Gateway, f field) { gw.MaxRequestBody = d.size(f) }},
	{"max_bodies_in_flight", takes(KindSize, "Request body bytes held by all requests at once; at least max_request_body. Default 256MiB."),
		func(d *decoder, gw *Gateway, f field) { gw.MaxBodiesInFlight = d.size(f) }},
	{"read_header_timeout", takes(KindDurationOrSeconds, "Time to read a request's headers. Default 30s."), func(d *decoder, gw *Gateway, f field) { gw.ReadHeaderTimeout = d.duration(f, someCallLimit) }},
	{"body_read_timeout", takes(KindDurationOrSeconds, "Time to read a request's body once its headers are in. Default 60s."),
		func(d *decoder, gw *Gateway, f field) { gw.BodyReadTimeout = d.duration(f, someCallLimit) }},
	{"idle_timeout", takes(KindDurationOrSeconds, "How long a kept-alive client connection may wait for its next request. Default 120s."),
		func(d *decoder, gw *Gateway, f field) { gw.IdleTimeout = d.duration(f, someCallLimit) }},
}

// gateway decodes the gateway: block and checks that a body of the
// largest allowed size fits in what may be in flight.
func (d *decoder) gateway(f field, gw *Gateway) {
	var bodyF, flightF *field
	for _, g := range gatewayFields.decode(d, f.val, f.path, gw) {
		switch g.name {
		case "max_request_body":
			bodyF = &g
		case "max_bodies_in_flight":
			flightF = &g
		}
	}
	if gw.MaxRequestBody > 0 && gw.MaxBodiesInFlight > 0 && gw.MaxBodiesInFlight < gw.MaxRequestBody {
		at := flightF
		if at == nil {
			at = bodyF
		}
		d.errf(at.val, "gateway.max_bodies_in_flight (%d bytes) is below gateway.max_request_body (%d bytes): a request of the largest allowed size could never be read; raise max_bodies_in_flight or lower max_request_body",
			gw.MaxBodiesInFlight, gw.MaxRequestBody)
	}
}

// origins reads gateway.allowed_origins: each an origin as a browser sends
// it, scheme://host[:port], with no path; "*" is refused (the proxy lends
// the owner's API key: every page that may call it is named).
func (d *decoder) origins(f field) []string {
	var out []string
	for _, o := range d.strings(f) {
		u, err := url.Parse(o)
		switch {
		case o == "*":
			d.errf(f.val, "%s: \"*\" would let every web page use your API keys through the proxy; list each origin, like http://localhost:3000", f.path)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			d.errf(f.val, "%s: %q is not an origin; write scheme://host[:port] as the browser sends it, like http://localhost:3000", f.path, o)
		default:
			out = append(out, strings.ToLower(u.Scheme+"://"+u.Host))
		}
	}
	return out
}

func (d *decoder) listen(f field) string {
	s := d.nonEmpty(f)
	host, port, err := net.SplitHostPort(s)
	n, perr := strconv.Atoi(port)
	if s != "" && (err != nil || perr != nil || n < 0 || n > 65535) {
		d.errf(f.val, "%s: %s is not host:port, like 127.0.0.1:7411", f.path, excerpt(s))
	}
	_ = host
	return s
}

var agentFields = keyed[*Agent]{
	{"run_budget_seconds", takes(KindSeconds, "Budget of a run: wrap-up notice at 80%, implicit stale timeouts capped at half the remainder."),
		func(d *decoder, a *Agent, f field) { a.RunBudget = d.duration(f, someRuntime) }},
	{"local_stream_stale_timeout", takes(KindDurationOrSeconds, "Stale-stream ceiling for local endpoints at implicit defaults. Default 900."),
		func(d *decoder, a *Agent, f field) { a.LocalStreamStaleTimeout = d.duration(f, someCallLimit) }},
	{"stale_timeout_hard_cap", takes(KindDurationOrSeconds, "Caps implicit stale timeouts on every path."), func(d *decoder, a *Agent, f field) { a.StaleTimeoutHardCap = d.duration(f, someCallLimit) }},
	{"stream_drain_timeout", takes(KindDurationOrSeconds, "Post-terminal drain. Default 2."), func(d *decoder, a *Agent, f field) { a.StreamDrainTimeout = d.duration(f, someCallLimit) }},
}

var metricsFields = keyed[*Metrics]{
	{"listen", takes(KindListen, "Address of the Prometheus metrics endpoint (/metrics). Off unless set. Loopback unless remote is true."), func(d *decoder, m *Metrics, f field) { m.Listen = d.listen(f) }},
	{"token_file", takes(KindNonEmpty, "File holding the bearer token a scrape must send (Authorization: Bearer …). No token when unset."), func(d *decoder, m *Metrics, f field) { m.TokenFile = d.path(f) }},
	{"remote", takes(KindBool, "Allow a listen address that is not loopback (the pod IP, 0.0.0.0), where a cluster's Prometheus scrapes, and requests whose Host is not loopback. Default false; set token_file with it."),
		func(d *decoder, m *Metrics, f field) { m.Remote = d.bool(f) }},
}

var probesFields = keyed[*Probes]{
	{"listen", takes(KindListen, "Address of the liveness (/livez) and readiness (/readyz) endpoints. Off unless set. Loopback unless remote is true."), func(d *decoder, p *Probes, f field) { p.Listen = d.listen(f) }},
	{"remote", takes(KindBool, "Allow a listen address that is not loopback (the pod IP, 0.0.0.0), where a kubelet's HTTP probes come from. Default false."), func(d *decoder, p *Probes, f field) { p.Remote = d.bool(f) }},
}

// defaultsFields are the unit keys hermes.yaml may give every unit a
// default for; a unit's own key decodes the same way (unitFields).
var defaultsFields = slices.Concat(keyed[*Defaults]{
	{"restart", oneOf(restarts, ""), func(d *decoder, def *Defaults, f field) { def.Restart = enum(d, f, ParseRestart, def.Restart) }},
	{"restart_sec", takes(KindDurationOrSeconds, ""), func(d *decoder, def *Defaults, f field) { def.RestartSec = d.duration(f, anyDelay) }},
	{"restart_max_sec", takes(KindDurationOrSeconds, ""), func(d *decoder, def *Defaults, f field) { def.RestartMax = d.duration(f, someDelay) }},
	{"start_limit", block(KindBlock, startLimitFields, ""), func(d *decoder, def *Defaults, f field) { startLimitFields.decode(d, f.val, f.path, &def.StartLimit) }},
	{"timeouts", block(KindBlock, timeoutsFields, ""), func(d *decoder, def *Defaults, f field) { timeoutsFields.decode(d, f.val, f.path, &def.Timeouts) }},
	{"stop_signal", takes(KindSignal, ""), func(d *decoder, def *Defaults, f field) { def.StopSignal = d.signal(f, def.StopSignal) }},
	{"log", block(KindBlock, logFields[1:], ""), func(d *decoder, def *Defaults, f field) { logFields[1:].decode(d, f.val, f.path, &def.Log) }},
}, lift(execFields, func(def *Defaults) *Exec { return &def.Exec }))

func (d *decoder) providers(f field) map[string]Provider {
	out := named(d, f, "provider id", func(id string, g field) Provider {
		p := d.provider(g, false)
		p.ID = id
		return p
	})
	if out == nil {
		out = map[string]Provider{}
	}
	return out
}

// named decodes f, a mapping of names (what they are: "provider id") to
// blocks, each through one; nil when f is empty or null. An empty name,
// a name given twice, and a value that is no mapping of names are errors
// at their place.
func named[T any](d *decoder, f field, what string, one func(name string, g field) T) map[string]T {
	n := f.val
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errf(n, "%s: want a mapping of %s to settings, got %s", f.path, what, kindName(n))
		return nil
	}
	out := map[string]T{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			d.errf(k, "%s: a %s must be a non-empty name, got %s", f.path, what, kindName(k))
			continue
		}
		if _, dup := out[k.Value]; dup {
			d.errf(k, "%s: %s is defined twice", f.path, excerpt(k.Value))
			continue
		}
		out[k.Value] = one(k.Value, field{name: k.Value, path: f.path + "." + k.Value, key: k, val: resolve(n.Content[i+1])})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// providerFields are a unit's provider: keys; a provider of hermes.yaml
// has all but the first (id:, its key there).
var providerFields = keyed[*Provider]{
	{"id", takes(KindNonEmpty, "Provider id the proxy routes to."), func(d *decoder, p *Provider, f field) { p.ID = d.nonEmpty(f) }},
	{"base_url", takes(KindURL, "OpenAI-compatible base URL, like http://127.0.0.1:8080/v1."), func(d *decoder, p *Provider, f field) { p.BaseURL = d.httpURL(f) }},
	{"api_key_env", takes(KindEnvName, "Name of the environment variable holding the API key (not the key)."), func(d *decoder, p *Provider, f field) {
		p.APIKeyEnv = d.nonEmpty(f)
		if strings.ContainsAny(p.APIKeyEnv, "= $") {
			d.errf(f.val, "api_key_env: write the name of the variable holding the key (like OPENAI_API_KEY), not its value")
		}
		if p.APIKeyFile != "" {
			d.errf(f.key, "%s: api_key_file is set too; keep one of the two", f.path)
		}
	}},
	{"api_key_file", takes(KindNonEmpty, "File holding the API key (a mounted Kubernetes Secret, a Docker secret), read at each call; instead of api_key_env."), func(d *decoder, p *Provider, f field) {
		p.APIKeyFile = d.path(f)
		if p.APIKeyEnv != "" {
			d.errf(f.key, "%s: api_key_env is set too; keep one of the two", f.path)
		}
	}},
	{"stale_timeout_seconds", takes(KindSeconds, "Explicit stale timeout: beats floors and tiers."), func(d *decoder, p *Provider, f field) { p.StaleTimeout = d.duration(f, someCallLimit) }},
	{"models", block(KindByID, modelFields, "Per-model settings, by model id."), func(d *decoder, p *Provider, f field) { p.Models = d.models(f) }},
	{"tiers", block(KindItems, tierFields, "Context tiers replacing the defaults."), func(d *decoder, p *Provider, f field) {
		p.Tiers = items(d, f, "{above_tokens: N, seconds: S}", "each tier needs above_tokens: and seconds:", tierFields)
	}},
	{"floors", block(KindItems, floorFields, "Extra model floors."), func(d *decoder, p *Provider, f field) {
		p.Floors = items(d, f, "{slug: NAME, seconds: S}", "each floor needs slug: and seconds:", floorFields)
	}},
}

var modelFields = keyed[*ProviderModel]{
	{"stale_timeout_seconds", takes(KindSeconds, ""), func(d *decoder, m *ProviderModel, f field) { m.StaleTimeout = d.duration(f, someCallLimit) }},
}

var tierFields = keyed[*Tier]{
	{"above_tokens", between(1, MaxTokens, ""), func(d *decoder, t *Tier, f field) { t.AboveTokens = d.count(f) }},
	{"seconds", takes(KindSeconds, ""), func(d *decoder, t *Tier, f field) { t.Timeout = d.duration(f, someCallLimit) }},
}

var floorFields = keyed[*Floor]{
	{"slug", takes(KindNonEmpty, ""), func(d *decoder, fl *Floor, f field) { fl.Slug = strings.ToLower(d.nonEmpty(f)) }},
	{"seconds", takes(KindSeconds, ""), func(d *decoder, fl *Floor, f field) { fl.Timeout = d.duration(f, someCallLimit) }},
}

// provider decodes a provider block: providers.<id> in hermes.yaml
// (inUnit false, the id is the key) or a unit's provider: (inUnit true,
// id: and base_url: required).
func (d *decoder) provider(f field, inUnit bool) Provider {
	var p Provider
	if !inUnit {
		providerFields[1:].decode(d, f.val, f.path, &p)
		return p
	}
	seen := map[string]bool{}
	for _, g := range providerFields.decode(d, f.val, f.path, &p) {
		seen[g.name] = true
	}
	if isMapping(f.val) {
		if !seen["id"] {
			d.errf(f.val, "provider: id: is required (the provider id the proxy routes to)")
		}
		if !seen["base_url"] {
			d.errf(f.val, "provider: base_url: is required (where this unit serves, like http://127.0.0.1:8080/v1)")
		}
	}
	return p
}

func isMapping(n *yaml.Node) bool { return n.Kind == yaml.MappingNode }

func (d *decoder) models(f field) map[string]ProviderModel {
	return named(d, f, "model id", func(_ string, g field) ProviderModel {
		var m ProviderModel
		modelFields.decode(d, g.val, g.path, &m)
		return m
	})
}

// items decodes f, a list of mappings that each hold every key of k;
// nil when f is empty or null. form is how an item is written ("{slug:
// NAME, seconds: S}") and need what an item lacking a key is told ("each
// floor needs slug: and seconds:"), for messages.
func items[T any](d *decoder, f field, form, need string, k keyed[*T]) []T {
	if isNull(f.val) {
		return nil
	}
	if f.val.Kind != yaml.SequenceNode {
		d.errf(f.val, "%s: want a list of %s, got %s", f.path, form, kindName(f.val))
		return nil
	}
	var out []T
	for i, n := range f.val.Content {
		var it T
		path := fmt.Sprintf("%s[%d]", f.path, i)
		if fields := k.decode(d, n, path, &it); isMapping(resolve(n)) && len(fields) < len(k) {
			d.errf(n, "%s: %s", path, need)
		}
		out = append(out, it)
	}
	return out
}

// readFile reads a unit or config file after the file checks: it must be
// a regular file (symlinks followed; a dangling one is refused), at most
// MaxFileSize bytes, and, when secure is set, neither writable by group or
// others nor owned by another user (see checkOwner).
func readFile(path string, secure bool) ([]byte, error) {
	data, _, err := readLink(path, secure)
	return data, err
}

// readLink is readFile, and says whether path is a symbolic link.
func readLink(path string, secure bool) (_ []byte, link bool, _ error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, Errors{{File: path, Err: fmt.Errorf("%w: %w", ErrFile, fs.ErrNotExist), Msg: "no such file"}}
		}
		return nil, false, Errors{{File: path, Err: ErrFile, Msg: fmt.Sprintf("cannot read: %v", unwrapPath(err))}}
	}
	if link = fi.Mode()&fs.ModeSymlink != 0; link {
		fi, err = os.Stat(path)
		if err != nil {
			return nil, link, Errors{symlinkError(path, err)}
		}
	}
	data, err := readChecked(path, fi, secure)
	return data, link, err
}

// readChecked is readFile's part after the lstat: fi is the file's (the
// link's target's).
func readChecked(path string, fi fs.FileInfo, secure bool) ([]byte, error) {
	if fi.IsDir() {
		return nil, Errors{{File: path, Err: ErrFile, Msg: "is a directory, not a file; give a .yaml file (or pass the directory where a directory is expected)"}}
	}
	if !fi.Mode().IsRegular() {
		return nil, Errors{{File: path, Err: ErrFile, Msg: fmt.Sprintf("is not a regular file (%s)", fi.Mode().Type())}}
	}
	if fi.Size() > MaxFileSize {
		return nil, Errors{{File: path, Err: ErrFile, Msg: fmt.Sprintf("file is %d bytes, over the %d-byte limit; is it the right file?", fi.Size(), MaxFileSize)}}
	}
	if secure {
		if e := checkOwner(path, fi, "file"); e != nil {
			return nil, Errors{e}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, Errors{{File: path, Err: ErrFile, Msg: fmt.Sprintf("cannot read: %v", unwrapPath(err))}}
	}
	defer f.Close()
	data := make([]byte, 0, fi.Size()+1)
	buf := make([]byte, 32<<10)
	for len(data) <= MaxFileSize {
		n, err := f.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			break
		}
	}
	if len(data) > MaxFileSize {
		return nil, Errors{{File: path, Err: ErrFile, Msg: fmt.Sprintf("file grew over the %d-byte limit while reading", MaxFileSize)}}
	}
	return data, nil
}
