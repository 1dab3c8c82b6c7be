package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hermes-units/hermes/units"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

func TestCheckedInFilesAreGenerated(t *testing.T) {
	files, _ := generated(t)
	for _, name := range Files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("schema/%s: %v; run `go generate ./schema`", name, err)
			continue
		}
		if !bytes.Equal(got, files[name]) {
			t.Errorf("schema/%s differs from what the generator produces; run `go generate ./schema` and commit the result", name)
		}
	}
}

func compile(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	abs, err := filepath.Abs(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(abs)
	if err != nil {
		t.Fatalf("compiling %s: %v", name, err)
	}
	return s
}

// instance turns YAML into the JSON value the schema sees.
func instance(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("YAML: %v", err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("as JSON: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

var modeline = regexp.MustCompile(`(?m)^# yaml-language-server: \$schema=(\S+)$`)

func TestExamplesValidate(t *testing.T) {
	unitSchema := compile(t, "unit.schema.json")
	configSchema := compile(t, "config.schema.json")
	unitFiles, _ := filepath.Glob("../examples/units/*.yaml")
	if len(unitFiles) == 0 {
		t.Fatal("no example units in examples/units")
	}
	files := append(unitFiles, "../examples/hermes.yaml")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, want := unitSchema, "unit.schema.json"
			if filepath.Base(file) == "hermes.yaml" {
				s, want = configSchema, "config.schema.json"
			}
			m := modeline.FindSubmatch(data)
			if m == nil {
				t.Fatalf("%s has no `# yaml-language-server: $schema=...` line", file)
			}
			target := filepath.Join(filepath.Dir(file), string(m[1]))
			if abs, _ := filepath.Abs(target); abs != mustAbs(t, want) {
				t.Errorf("%s: modeline points at %s, want schema/%s", file, target, want)
			}
			if err := s.Validate(instance(t, data)); err != nil {
				t.Errorf("%s does not validate against %s: %v", file, want, err)
			}
		})
	}
	l := &units.Loader{Insecure: true} // a checkout's modes depend on the umask
	d, err := l.LoadDir("../examples/units")
	if err != nil {
		t.Fatal(err)
	}
	if es := d.Errors(); len(es) > 0 {
		t.Errorf("the loader rejects examples the schema accepts:\n%v", es)
	}
	if _, err := units.LoadConfig("../examples/hermes.yaml"); err != nil {
		t.Errorf("the loader rejects examples/hermes.yaml: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// TestBadUnitsRejectedByBoth checks that schema and loader agree on a few
// kinds of mistakes, so an editor flags what hermesd would refuse.
func TestBadUnitsRejectedByBoth(t *testing.T) {
	s := compile(t, "unit.schema.json")
	tests := map[string]string{
		"unknown key":                "command: [a]\ncomand: [b]\n",
		"unknown nested key":         "command: [a]\ntimeouts: {strat: 1s}\n",
		"command and shell":          "command: [a]\nshell: b\n",
		"neither command nor shell":  "description: x\n",
		"empty command":              "command: []\n",
		"bad ownership":              "command: [a]\nownership: owner\n",
		"survivor without reason":    "command: [a]\nownership: adoptable\n",
		"survivor with empty reason": "command: [a]\nownership: adoptable\nreason: ''\n",
		"bad restart":                "command: [a]\nrestart: sometimes\n",
		"duration without unit":      "command: [a]\ntimeouts: {start: 90}\n",
		"bad duration":               "command: [a]\nrestart_sec: soon\n",
		"port out of range":          "command: [a]\nports: [70000]\n",
		"port twice":                 "command: [a]\nports: [80, 80]\n",
		"two probes":                 "command: [a]\nready: {tcp: 'h:1', log: x}\n",
		"bad size":                   "command: [a]\nlog: {max_size: 10XB}\n",
		"bad signal":                 "command: [a]\nstop_signal: '-9'\n",
		"cron with four fields":      "command: [a]\nschedule: '* * * *'\n",
		"job with restart always":    "command: [a]\nschedule: '* * * * *'\nrestart: always\n",
		"budget without schedule":    "command: [a]\nrun_budget_seconds: 60\n",
		"budget as a string":         "command: [a]\nschedule: '* * * * *'\nrun_budget_seconds: 15m\n",
		"provider without id":        "command: [a]\nprovider: {base_url: 'http://h/'}\n",
		"provider unknown key":       "command: [a]\nprovider: {id: x, base_url: 'http://h/', models: {m: {timeout: 1}}}\n",
		"bad dependency name":        "command: [a]\nafter: ['../x']\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			if err := s.Validate(instance(t, []byte(content))); err == nil {
				t.Errorf("the schema accepts %q", content)
			}
			if _, err := (&units.Loader{}).Parse("/u/web.yaml", []byte(content)); err == nil {
				t.Errorf("the loader accepts %q", content)
			}
		})
	}
}

// TestCanonicalRenderingValidates checks that every key the loader renders
// is one the schema knows, using a unit that sets every field.
func TestCanonicalRenderingValidates(t *testing.T) {
	s := compile(t, "unit.schema.json")
	const full = `description: d
command: [a, "8080"]
workdir: /tmp
env: {A: "1"}
ownership: adoptable
reason: r
restart: on-failure
restart_sec: 2s
restart_max_sec: 1m
start_limit: {burst: 3, interval: 10s}
after: [x]
requires: [x]
ready: {http: "http://127.0.0.1:1/"}
timeouts: {start: 1s, stop: 1s, runtime_max: 1h, watchdog: 5s}
stop_signal: SIGINT
ports: [8080]
log: {path: /tmp/a.log, max_size: 1MiB, keep: 2}
schedule: "*/5 * * * *"
run_budget_seconds: 60
wrapup_signal: USR1
provider:
  id: p
  base_url: http://127.0.0.1:1/v1
  api_key_env: KEY
  stale_timeout_seconds: 5
  models: {m: {stale_timeout_seconds: 6}}
  tiers: [{above_tokens: 1, seconds: 7}]
  floors: [{slug: s, seconds: 8}]
`
	spec, err := (&units.Loader{}).Parse("/u/full.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"written": []byte(full), "rendered": out} {
		if err := s.Validate(instance(t, data)); err != nil {
			t.Errorf("the %s unit does not validate: %v\n%s", name, err, data)
		}
	}
}
