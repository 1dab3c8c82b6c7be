package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hermes-units/hermes/units"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// The keys layered by Resolve: flag names, the lower-case part of the
// HERMES_* variables, and top-level keys of hermes.yaml.
const (
	KeyConfig = "config"
	KeyUnits  = "units"
	KeyState  = "state"
	KeySocket = "socket"
	KeyRole   = "role"
)

// Args returns the flags that give hermesd these paths: --config and
// --socket only when set (else hermesd takes its defaults), --units and
// --state always.
func (p Paths) Args() []string {
	var args []string
	if p.Config != "" {
		args = append(args, "--"+KeyConfig, p.Config)
	}
	args = append(args, "--"+KeyUnits, p.Units, "--"+KeyState, p.State)
	if p.Socket != "" {
		args = append(args, "--"+KeySocket, p.Socket)
	}
	return args
}

// EnvPrefix is the prefix of the environment variables Resolve reads.
const EnvPrefix = "HERMES_"

// ErrConfig reports a config file that exists but cannot be read or parsed.
var ErrConfig = errors.New("config file unusable")

// AddFlags defines --config, --units, --state and --socket on fs, with the
// XDG defaults in their help. Values are read back with Resolve, never from
// the flag variables: only Resolve applies the layering.
func AddFlags(fs *pflag.FlagSet) {
	d := Defaults()
	fs.String(KeyConfig, d.Config, "main config file, optional (env HERMES_CONFIG)")
	fs.String(KeyUnits, d.Units, "units directory (env HERMES_UNITS, config key units)")
	fs.String(KeyState, d.State, "state directory: ledger, logs, lock (env HERMES_STATE, config key state)")
	fs.String(KeySocket, d.Socket, "control socket of hermesd (env HERMES_SOCKET, config key socket)")
}

// Resolved is the outcome of Resolve: the paths, and the role when the
// flag set defines --role or env or file set it ("" otherwise).
type Resolved struct {
	Paths
	Role string
	From Sources // where each path came from
}

// Source is the layer a path was taken from.
type Source int

// The layers, lowest first.
const (
	FromDefault Source = iota
	FromFile
	FromEnv
	FromFlag
)

// Sources say where Resolve took the units and state directories and the
// socket from. hermesctl takes a running hermesd's directories over those
// of the lower layers, but not over what the user typed or exported.
type Sources struct {
	Config, Units, State, Socket Source
}

// Given reports whether the user gave the path on the command line or in
// the environment.
func (s Source) Given() bool { return s >= FromEnv }

// Resolve layers each key flag > env (HERMES_CONFIG, HERMES_UNITS,
// HERMES_STATE, HERMES_SOCKET, HERMES_ROLE) > config file (top-level keys
// units, state, socket, role of hermes.yaml) > default (Defaults), with
// koanf. Only flags the user set count as flags. The config file's own path
// is flag > env > default; a missing file is fine (the file is optional),
// one that does not parse is an error wrapping ErrConfig, returned with the
// paths resolved without the file. Paths from
// the file are "~"-expanded and resolved against the file's directory; the
// other keys of the file are left to the units package.
func Resolve(fs *pflag.FlagSet) (Resolved, error) {
	d := Defaults()
	keys := map[string]bool{KeyConfig: true, KeyUnits: true, KeyState: true, KeySocket: true, KeyRole: true}
	envP := env.Provider(".", env.Opt{Prefix: EnvPrefix, TransformFunc: func(k, v string) (string, any) {
		k = strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
		if !keys[k] || strings.TrimSpace(v) == "" {
			return "", nil
		}
		return k, strings.TrimSpace(v)
	}})
	flagP := posflag.ProviderWithFlag(fs, ".", nil, func(f *pflag.Flag) (string, any) {
		if !f.Changed || !keys[f.Name] {
			return "", nil
		}
		return f.Name, f.Value.String()
	})

	k := koanf.New(".")
	if _, err := set(k, map[string]string{KeyConfig: d.Config, KeyUnits: d.Units, KeyState: d.State, KeySocket: d.Socket}); err != nil {
		return Resolved{}, err
	}
	// The config file's path first: flag > env > default.
	pre := koanf.New(".")
	if err := load(pre, envP, flagP); err != nil {
		return Resolved{}, err
	}
	cfg := d.Config
	var fileErr error
	if pre.Exists(KeyConfig) {
		cfg = expand(pre.String(KeyConfig))
	}
	// The file's keys through the one decoder of hermes.yaml (units),
	// paths already "~"-expanded and taken against the file's directory.
	dm, err := units.LoadDaemon(cfg)
	if err != nil {
		fileErr = fmt.Errorf("%w: %w; fix it (hermesctl validate shows where)", ErrConfig, err)
	}
	fromFile, err := set(k, map[string]string{KeyUnits: dm.Units, KeyState: dm.State, KeySocket: dm.Socket, KeyRole: string(dm.Role)})
	if err != nil {
		return Resolved{}, err
	}
	if err := load(k, envP, flagP); err != nil {
		return Resolved{}, err
	}
	envK := koanf.New(".")
	if err := load(envK, envP); err != nil {
		return Resolved{}, err
	}
	source := func(key string) Source {
		if f := fs.Lookup(key); f != nil && f.Changed {
			return FromFlag
		}
		if envK.Exists(key) {
			return FromEnv
		}
		if fromFile[key] {
			return FromFile
		}
		return FromDefault
	}
	r := Resolved{
		Paths: Paths{
			Config: cfg,
			Units:  expand(k.String(KeyUnits)),
			State:  expand(k.String(KeyState)),
			Socket: expand(k.String(KeySocket)),
		},
		Role: k.String(KeyRole),
		From: Sources{Config: source(KeyConfig), Units: source(KeyUnits), State: source(KeyState), Socket: source(KeySocket)},
	}
	if err := r.absolute(); err != nil {
		return r, err
	}
	return r, fileErr
}

// set sets in k each value of vals that is not empty (an empty one leaves
// the lower layer's), and returns the keys it set.
func set(k *koanf.Koanf, vals map[string]string) (map[string]bool, error) {
	done := map[string]bool{}
	for key, v := range vals {
		if v == "" {
			continue
		}
		if err := k.Set(key, v); err != nil {
			return nil, err
		}
		done[key] = true
	}
	return done, nil
}

// load loads each provider into k in turn, a later one over an earlier.
func load(k *koanf.Koanf, ps ...koanf.Provider) error {
	for _, p := range ps {
		if err := k.Load(p, nil); err != nil {
			return err
		}
	}
	return nil
}

// absolute makes every path of r absolute against the working directory,
// once, here: hermesd hands these paths out (a job's HERMES_WRAPUP_FILE,
// NOTIFY_SOCKET, log files, the default workdir) to processes that run in
// other directories, where a relative path names another file. Taking
// them at flag resolution also keeps hermesd and hermesctl started from
// the same directory in agreement.
func (r *Resolved) absolute() error {
	for _, p := range []*string{&r.Config, &r.Units, &r.State, &r.Socket} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("cannot make %q absolute: %w; pass an absolute path", *p, err)
		}
		*p = abs
	}
	return nil
}

// expand replaces a leading "~" with the home directory. A relative path
// is kept as given here, and made absolute against the working directory
// by Resolved.absolute, for both binaries alike.
func expand(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, p[1:])
		}
	}
	return p
}
