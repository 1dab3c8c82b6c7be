package units

import (
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// fullSpec sets the fields of Spec (and of the types it holds) to values
// other than their zero values and defaults, so that a field the renderer
// or the decoder forgets fails the round trip. TestVariantsAreFull keeps
// it full when fields are added.
func fullSpec() *Spec {
	return &Spec{
		Name:         "web",
		File:         "/units/web.yaml",
		Description:  "Local model router: \"quoted\", 8080",
		Type:         Simple,
		Command:      []string{"llama-server", "--port", "8080", "-m", "/models/qwq.gguf", "true", "~", ""},
		Workdir:      "/home/u/models",
		Env:          map[string]string{"CUDA_VISIBLE_DEVICES": "0", "EMPTY": "", "YES": "yes", "MULTI": "a\nb"},
		Ownership:    PersistOnRelease,
		Reason:       "keeps the model warm across gateway restarts",
		Restart:      RestartNo,
		RestartSec:   1500 * time.Millisecond,
		RestartMax:   2 * time.Minute,
		StartLimit:   StartLimit{Burst: 9, Interval: 45 * time.Second},
		After:        []string{"db", "cache"},
		Requires:     []string{"db"},
		Ready:        Ready{TCP: "127.0.0.1:8080"},
		Timeouts:     Timeouts{Start: 2 * time.Minute, Stop: 7 * time.Second, RuntimeMax: time.Hour, Watchdog: 30 * time.Second},
		StopSignal:   Signal(syscall.SIGINT),
		ReloadSignal: Signal(syscall.SIGHUP),
		Ports:        []int{8080, 9090},
		Log:          Log{Path: "/var/log/web.log", MaxSize: 3 << 20, Keep: 5},
		Schedule:     "*/15 * * * *",
		RunBudget:    850 * time.Second,
		WrapupSig:    Signal(syscall.SIGUSR1),
		Provider: &Provider{
			ID: "local-reasoning", BaseURL: "http://127.0.0.1:8080/v1", APIKeyEnv: "LOCAL_KEY",
			StaleTimeout: 900 * time.Second,
			Models:       map[string]ProviderModel{"qwq-32b": {StaleTimeout: 600 * time.Second}},
			Tiers:        []Tier{{AboveTokens: 10000, Timeout: 600 * time.Second}},
			Floors:       []Floor{{Slug: "qwq", Timeout: 300 * time.Second}},
		},
		ProxyEnv: true,
		Exec: Exec{
			EnvFiles: []EnvFile{{Path: "/etc/web.env"}, {Path: "/home/u/web dir/.env", Optional: true}},
			User:     "postgres", Group: "1001", Groups: []string{"ssl-cert", "video"},
			Umask: ptr(uint32(0o027)), Nice: ptr(-5),
			Limits: map[string]Rlimit{"nofile": {Soft: 1024, Hard: 65536}, "core": {Soft: Infinity, Hard: Infinity}, "nproc": {Soft: 512, Hard: Infinity}},
			Cgroup: CgroupLimits{MemoryMax: 512 << 20, CPUWeight: 50, CPUMax: 150, TasksMax: 64},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// variants are specs that, together, set every field: fullSpec holds one
// readiness probe and command, the others the alternatives.
func variants() map[string]*Spec {
	sh := fullSpec()
	sh.Command, sh.Shell = nil, "exec npm run dev -- --port 8080 # not a comment"
	http := fullSpec()
	http.Ready = Ready{HTTP: "https://[::1]:8443/health?x=1"}
	notify := fullSpec()
	notify.Ready = Ready{Notify: true}
	logp := fullSpec()
	logp.Ready = Ready{Log: `^listening on .*:\d+$`}
	// The key from a file instead of a variable (a mounted Secret).
	logp.Provider.APIKeyEnv, logp.Provider.APIKeyFile = "", "/run/secrets/local key"
	// A forking or oneshot unit is no job: their variants drop schedule: and
	// what only a job has.
	forking := fullSpec()
	forking.ReloadSignal, forking.Reload = 0, []string{"nginx", "-s", "reload"} // reload_signal and reload: one of them
	forking.Type, forking.PIDFile = Forking, "/run/user/1000/web dir/web.pid"
	forking.Schedule, forking.RunBudget, forking.WrapupSig = "", 0, 0
	oneshot := fullSpec()
	oneshot.Type, oneshot.RemainAfter, oneshot.Ready = Oneshot, true, Ready{}
	oneshot.Schedule, oneshot.RunBudget, oneshot.WrapupSig = "", 0, 0
	return map[string]*Spec{"command tcp": fullSpec(), "shell": sh, "http": http, "notify": notify, "log": logp,
		"forking": forking, "oneshot": oneshot}
}

// TestVariantsAreFull fails when a field of Spec (or of a type it holds)
// is zero in every variant: add it to fullSpec so the round trip covers it.
func TestVariantsAreFull(t *testing.T) {
	set := map[string]bool{}
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			for i := range v.NumField() {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			set[path] = set[path] || v.Len() > 0
			for i := range v.Len() {
				if v.Index(i).Kind() == reflect.Struct {
					walk(path+"[]", v.Index(i))
				}
			}
		case reflect.Map:
			set[path] = set[path] || v.Len() > 0
			for _, k := range v.MapKeys() {
				if v.MapIndex(k).Kind() == reflect.Struct {
					walk(path+"{}", v.MapIndex(k))
				}
			}
		default:
			set[path] = set[path] || !v.IsZero()
		}
	}
	for _, s := range variants() {
		walk("Spec", reflect.ValueOf(s))
	}
	for path, ok := range set {
		if !ok {
			t.Errorf("%s is zero in every variant; set it in fullSpec so the round trip covers it", path)
		}
	}
	if len(set) < 40 {
		t.Errorf("walked %d fields, want every leaf of Spec (40 or more)", len(set))
	}
}

func TestRoundTrip(t *testing.T) {
	for name, want := range variants() {
		t.Run(name, func(t *testing.T) {
			out, err := yaml.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := (&Loader{}).Parse(want.File, out)
			if err != nil {
				t.Fatalf("parsing the rendering:\n%s\nerror: %v", out, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("round trip changed the spec:\nrendered:\n%s\ngot  %+v\nwant %+v", out, got, want)
			}
			again, _ := yaml.Marshal(got)
			if string(again) != string(out) {
				t.Errorf("rendering is not stable:\nfirst:\n%s\nsecond:\n%s", out, again)
			}
		})
	}
}

func TestRoundTripDefaults(t *testing.T) {
	s, err := (&Loader{}).Parse("/u/min.yaml", []byte("shell: sleep 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := yaml.Marshal(s)
	got, err := (&Loader{}).Parse("/u/min.yaml", out)
	if err != nil {
		t.Fatalf("parsing the rendering:\n%s\nerror: %v", out, err)
	}
	if !reflect.DeepEqual(got, s) {
		t.Errorf("got %+v, want %+v", got, s)
	}
}

func TestHash(t *testing.T) {
	base := `# web server
command: [python3, -m, http.server, "8080"]
env: {A: "1", B: "2"}
ports: [8080]
ready: {tcp: "127.0.0.1:8080"}
timeouts: {start: 10s}
description: serves files
`
	hash := func(content string) string {
		t.Helper()
		s, err := (&Loader{}).Parse("/u/web.yaml", []byte(content))
		if err != nil {
			t.Fatalf("Parse(%q): %v", content, err)
		}
		return s.Hash()
	}
	want := hash(base)
	same := map[string]string{
		"reordered and block style": `description: serves files
timeouts:
  start: 10s
ready:
  tcp: 127.0.0.1:8080
ports:
  - 8080
env:
  B: "2"
  A: "1"
command:
  - python3
  - -m
  - http.server
  - "8080"
`,
		"comments added":            strings.ReplaceAll(base, "\n", "  # note\n"),
		"description changed":       strings.Replace(base, "serves files", "serves other files", 1),
		"defaults written out":      base + "stop_signal: SIGTERM\nrestart: on-failure\n",
		"equivalent duration":       strings.Replace(base, "start: 10s", "start: 10000ms", 1),
		"restart policy change":     base + "restart: always\n",
		"reason and ownership same": base + "reason: x\n",
		"type simple written out":   base + "type: simple\n",
	}
	for name, content := range same {
		if got := hash(content); got != want {
			t.Errorf("%s: hash %s, want %s (unchanged)", name, got, want)
		}
	}
	different := map[string]string{
		"argv":        strings.Replace(base, `"8080"]`, `"8081"]`, 1),
		"shell":       strings.Replace(base, `command: [python3, -m, http.server, "8080"]`, `shell: python3 -m http.server 8080`, 1),
		"env":         strings.Replace(base, `B: "2"`, `B: "3"`, 1),
		"ports":       strings.Replace(base, "ports: [8080]", "ports: [8080, 8081]", 1),
		"ready":       strings.Replace(base, `tcp: "127.0.0.1:8080"`, `http: "http://127.0.0.1:8080/"`, 1),
		"timeouts":    strings.Replace(base, "start: 10s", "start: 11s", 1),
		"stop signal": base + "stop_signal: INT\n",
		"ownership":   base + "ownership: adoptable\nreason: x\n",
		"workdir":     base + "workdir: /tmp\n",
		"log path":    base + "log: {path: /tmp/x.log}\n",
		"type":        base + "type: forking\n",
		"pid file":    base + "type: forking\npid_file: /tmp/x.pid\n",
	}
	for name, content := range different {
		if got := hash(content); got == want {
			t.Errorf("%s changed: hash unchanged %s, want a different one", name, got)
		}
	}
}

func TestMarshalValueAndPointerAgree(t *testing.T) {
	s := fullSpec()
	byPtr, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	byVal, err := yaml.Marshal(*s)
	if err != nil {
		t.Fatal(err)
	}
	if string(byPtr) != string(byVal) {
		t.Errorf("yaml.Marshal(*Spec):\n%s\nyaml.Marshal(Spec):\n%s\nwant the same canonical rendering", byPtr, byVal)
	}
}
