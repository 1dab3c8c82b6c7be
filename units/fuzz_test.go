package units

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzLoad feeds arbitrary bytes to the unit decoder. It must never panic;
// every error must carry a position (line and column ≥ 1); and whatever it
// accepts must render and parse back to the same Spec. The corpus is in
// testdata/fuzz/FuzzLoad; run longer with
// go test -run '^$' -fuzz FuzzLoad -fuzztime 60s ./units
func FuzzLoad(f *testing.F) {
	for _, seed := range []string{
		"command: [a]\n",
		"shell: sleep 1\nownership: adoptable\nreason: r\n",
		"command: [python3, -m, http.server, \"8080\"]\nports: [8080]\nready: {tcp: 127.0.0.1:8080}\nenv: {A: 1}\n",
		"command: [a]\nschedule: '*/15 * * * *'\nrun_budget_seconds: 850\nwrapup_signal: USR1\n",
		"command: [a]\ntimeouts: {start: 1m30s, stop: 3s, runtime_max: 0s, watchdog: 10s}\nlog: {path: ~/x.log, max_size: 10MiB, keep: 3}\n",
		"command: [a]\nprovider: {id: x, base_url: 'http://127.0.0.1:8080/v1', stale_timeout_seconds: 900, tiers: [{above_tokens: 1, seconds: 2}]}\n",
		"x: &a [b]\ncommand: *a\n",
		"command: [a]\nuser: nobody\ngroup: \"1\"\nsupplementary_groups: []\numask: 0027\nnice: -3\nlimits: {nofile: \"1:2\", core: infinity}\nmemory_max: 1GiB\ncpu_weight: 5\ncpu_max: 150%\ntasks_max: 9\nenv_file: [-.env, /e]\n",
		"command: [a\n",
		"- a\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l := &Loader{}
		s, err := l.Parse("/units/fuzz.yaml", data)
		if err != nil {
			es, ok := err.(Errors)
			if !ok || len(es) == 0 {
				t.Fatalf("error %T %v, want non-empty Errors", err, err)
			}
			for _, e := range es {
				if e.Line < 1 || e.Column < 1 || e.Err == nil {
					t.Fatalf("error without a position or kind: %#v", e)
				}
			}
			return
		}
		out, err := yaml.Marshal(s)
		if err != nil {
			t.Fatalf("rendering an accepted spec: %v", err)
		}
		back, err := l.Parse("/units/fuzz.yaml", out)
		if err != nil {
			t.Fatalf("the rendering of an accepted spec does not parse:\ninput: %q\nrendering:\n%s\nerror: %v", data, out, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip changed the spec:\ninput: %q\nrendering:\n%s\ngot  %+v\nwant %+v", data, out, back, s)
		}
		if back.Hash() != s.Hash() {
			t.Fatalf("hash changed over a round trip")
		}
	})
}

// FuzzParseEnv feeds arbitrary text to the env file reader. It must never
// panic; every variable it returns is KEY=value with a valid key and no
// NUL; every error is an *EnvFileError with a line. Run longer with
// go test -run '^$' -fuzz FuzzParseEnv -fuzztime 60s ./units
func FuzzParseEnv(f *testing.F) {
	for _, seed := range []string{"A=1\n", "# c\nexport B=\"x\\ny\" # n\nC='z'\n", "A=\"open\nB=2\n", "nope\n", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		kvs, err := ParseEnv(text)
		if err != nil {
			var e *EnvFileError
			if !errors.As(err, &e) || e.Line < 1 {
				t.Fatalf("error %T %v, want an *EnvFileError with a line", err, err)
			}
			return
		}
		for _, kv := range kvs {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || !envKeyRE().MatchString(k) || strings.ContainsRune(kv, 0) {
				t.Fatalf("variable %q from %q", kv, text)
			}
		}
	})
}
