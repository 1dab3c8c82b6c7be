// Package kubernetes holds the example manifests of a hermes gateway on
// Kubernetes, and the test that a cluster would accept them: every
// manifest decodes strictly into the Kubernetes API types (an unknown
// field is an error), and the pieces agree with each other and with
// hermesd (see TestManifests). It is a module of its own so that the main
// module does not depend on the Kubernetes API.
package kubernetes

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/units"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// exitMargin is what hermesd needs past its longest unit stop to close
// the supervisor and exit.
const exitMargin = 5 * time.Second

// manifests are the objects of every *.yaml here, by kind and name.
type manifests struct {
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	deployments map[string]*appsv1.Deployment
}

// load decodes every document of every *.yaml strictly.
func load(t *testing.T) manifests {
	t.Helper()
	m := manifests{map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}, map[string]*appsv1.Deployment{}}
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			where := fmt.Sprintf("%s, document %d", f, i+1)
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			var obj any
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 ConfigMap":
				obj = &corev1.ConfigMap{}
			case "v1 Secret":
				obj = &corev1.Secret{}
			case "apps/v1 Deployment":
				obj = &appsv1.Deployment{}
			default:
				t.Fatalf("%s: %s %s is not a kind this test knows", where, tm.APIVersion, tm.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			switch o := obj.(type) {
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *appsv1.Deployment:
				m.deployments[o.Name] = o
			}
		}
	}
	return m
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestStrictDecoding: an unknown field is an error, so a manifest that
// decodes here has no field a cluster would drop.
func TestStrictDecoding(t *testing.T) {
	bad := []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {}\nbogus: 1\n")
	if err := yaml.UnmarshalStrict(bad, &corev1.ConfigMap{}); err == nil {
		t.Fatal("an unknown field decoded without error: the strict decoding is not strict")
	}
}

// flag is the value of --name=value in args.
func flag(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// port is the port number of host:port.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil {
		t.Fatalf("%q is not host:port", addr)
	}
	return n
}

// TestManifests checks that the Deployment runs hermesd on what the other
// manifests give it, consistently:
//   - --units and --config are mounted from ConfigMaps of these manifests,
//     and both load with hermesd's own decoder (package units);
//   - the liveness and readiness probes are HTTP GETs of /livez and
//     /readyz on the port of probes.listen, which is not loopback and
//     says probes.remote (the kubelet probes the pod IP);
//   - the Prometheus annotations name metrics.listen's port;
//   - every provider's api_key_env comes from a Secret of these manifests;
//   - terminationGracePeriodSeconds leaves room for the longest unit stop
//     and hermesd's exit, so the kubelet's KILL comes after the units'.
func TestManifests(t *testing.T) {
	m := load(t)
	if len(m.deployments) == 0 {
		t.Fatal("no Deployment")
	}
	for name, d := range m.deployments {
		t.Run(name, func(t *testing.T) { checkDeployment(t, m, d) })
	}
}

func checkDeployment(t *testing.T, m manifests, d *appsv1.Deployment) {
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want hermesd alone", len(spec.Containers))
	}
	c := spec.Containers[0]
	mounted := func(path string) *corev1.ConfigMap {
		t.Helper()
		for _, vm := range c.VolumeMounts {
			if vm.MountPath != path {
				continue
			}
			for _, v := range spec.Volumes {
				if v.Name == vm.Name && v.ConfigMap != nil {
					cm := m.configMaps[v.ConfigMap.Name]
					if cm == nil {
						t.Fatalf("%s is mounted from ConfigMap %s, which no manifest defines", path, v.ConfigMap.Name)
					}
					return cm
				}
			}
		}
		t.Fatalf("%s is not mounted from a ConfigMap", path)
		return nil
	}

	configPath := flag(c.Args, "config")
	cfgMap := mounted(filepath.Dir(configPath))
	cfgData, ok := cfgMap.Data[filepath.Base(configPath)]
	if !ok {
		t.Fatalf("ConfigMap %s has no key %s (--config %s)", cfgMap.Name, filepath.Base(configPath), configPath)
	}
	cfg, err := units.ParseConfig(configPath, filepath.Dir(configPath), []byte(cfgData))
	if err != nil {
		t.Fatalf("hermes.yaml from ConfigMap %s: %v", cfgMap.Name, err)
	}

	unitsMap := mounted(flag(c.Args, "units"))
	dir := t.TempDir()
	for key, data := range unitsMap.Data {
		if err := os.WriteFile(filepath.Join(dir, key), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	loaded, err := (&units.Loader{Defaults: &cfg.Defaults}).LoadDir(dir)
	if err != nil {
		t.Fatalf("units of ConfigMap %s: %v", unitsMap.Name, err)
	}
	for name, errs := range loaded.Failed {
		t.Errorf("unit %s of ConfigMap %s does not load: %v", name, unitsMap.Name, errs)
	}
	if len(loaded.Units) == 0 {
		t.Errorf("ConfigMap %s holds no unit", unitsMap.Name)
	}

	// Probes.
	if cfg.Probes.Listen == "" || !cfg.Probes.Remote {
		t.Errorf("probes %+v: the kubelet probes the pod IP, so probes.listen must be set and probes.remote true", cfg.Probes)
	}
	probePort := port(t, cfg.Probes.Listen)
	portOf := func(p corev1.Probe) (int, string) {
		if p.HTTPGet == nil {
			t.Fatalf("probe %+v is not an HTTP GET", p)
		}
		if p.HTTPGet.Port.IntValue() != 0 {
			return p.HTTPGet.Port.IntValue(), p.HTTPGet.Path
		}
		for _, cp := range c.Ports {
			if cp.Name == p.HTTPGet.Port.String() {
				return int(cp.ContainerPort), p.HTTPGet.Path
			}
		}
		t.Fatalf("probe port %s is not a port of the container", p.HTTPGet.Port.String())
		return 0, ""
	}
	for what, want := range map[string]struct {
		p    *corev1.Probe
		path string
	}{"liveness": {c.LivenessProbe, "/livez"}, "readiness": {c.ReadinessProbe, "/readyz"}} {
		if want.p == nil {
			t.Errorf("no %s probe", what)
			continue
		}
		if p, path := portOf(*want.p); p != probePort || path != want.path {
			t.Errorf("%s probe GETs %s on port %d, want %s on probes.listen's %d", what, path, p, want.path, probePort)
		}
	}

	// Metrics.
	ann := d.Spec.Template.Annotations
	if cfg.Metrics.Listen == "" {
		t.Error("metrics.listen is not set")
	} else if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(port(t, cfg.Metrics.Listen)) || ann["prometheus.io/path"] != "/metrics" {
		t.Errorf("Prometheus annotations %v, want scrape true, port %d (metrics.listen), path /metrics", ann, port(t, cfg.Metrics.Listen))
	} else if host, _, _ := strings.Cut(cfg.Metrics.Listen, ":"); !cfg.Metrics.Remote || host == "127.0.0.1" || host == "localhost" {
		t.Errorf("metrics.listen %s (remote %v): a scraper at the pod's IP cannot reach it; want a pod address with metrics.remote", cfg.Metrics.Listen, cfg.Metrics.Remote)
	}
	for _, a := range c.Args {
		if a == "--insecure-units" {
			t.Error("hermesd runs with --insecure-units: a ConfigMap volume is a read-only mount, which the units check accepts")
		}
	}

	// Provider keys from a Secret.
	for id, p := range cfg.Providers {
		if p.APIKeyEnv == "" {
			continue
		}
		var from *corev1.SecretKeySelector
		for _, e := range c.Env {
			if e.Name == p.APIKeyEnv && e.ValueFrom != nil {
				from = e.ValueFrom.SecretKeyRef
			}
		}
		if from == nil {
			t.Errorf("provider %s: %s is not set from a Secret", id, p.APIKeyEnv)
			continue
		}
		s := m.secrets[from.Name]
		if s == nil {
			t.Errorf("provider %s: Secret %s is not in the manifests", id, from.Name)
			continue
		}
		if _, ok := s.StringData[from.Key]; !ok {
			if _, ok := s.Data[from.Key]; !ok {
				t.Errorf("provider %s: Secret %s has no key %s", id, from.Name, from.Key)
			}
		}
	}

	// Grace.
	var longest time.Duration
	for _, u := range loaded.Units {
		longest = max(longest, u.Timeouts.Stop)
	}
	if spec.TerminationGracePeriodSeconds == nil {
		t.Fatal("terminationGracePeriodSeconds is not set (the default, 30 s, may not fit the units)")
	}
	if grace := time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second; grace < longest+exitMargin {
		t.Errorf("terminationGracePeriodSeconds %v < the longest unit stop %v + %v for hermesd's exit: the kubelet would KILL units still stopping", grace, longest, exitMargin)
	}
}

// TestContainerfile: what the repository's Containerfile copies and
// builds exists (the image itself cannot be built without a container
// runtime), the build is static, and the image's entrypoint is the
// hermesd it copies.
func TestContainerfile(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte("CGO_ENABLED=0")) {
		t.Error("the build is not static (no CGO_ENABLED=0)")
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/hermesd/main.go", "cmd/hermesctl"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("the Containerfile uses %s: %v", p, err)
		}
	}
	for _, want := range []string{"./cmd/hermesd", "COPY --from=build /out/hermesd", `ENTRYPOINT ["/usr/local/bin/hermesd"]`, "/usr/local/bin/"} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("the Containerfile has no %q", want)
		}
	}
	from := regexp.MustCompile(`(?m)^FROM (\S+)\s*$`).FindAllSubmatch(data, -1)
	if len(from) == 0 {
		t.Fatal("no final FROM")
	}
	final := string(from[len(from)-1][1])
	if !regexp.MustCompile(`/(busybox|alpine|debian):`).MatchString(final) {
		t.Errorf("final base %s: not one of the images known to have /bin/sh (busybox, alpine, debian)", final)
	}
}
