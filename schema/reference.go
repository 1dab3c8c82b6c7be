package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ReferenceFile is the key reference Generate writes, relative to this
// package's directory.
const ReferenceFile = "../docs/reference.md"

// Examples hold a YAML value for every key that takes one (not the blocks
// that only group keys), by the key's path in the reference: "unit." or
// "config." then the dotted key, "<id>" for a name chosen by the user and
// "[]" for a list item. The reference shows them; a test checks that each
// validates against its schema and that no key lacks one.
var Examples = map[string]string{
	"unit.description":                    "Local model router",
	"unit.type":                           "forking",
	"unit.command":                        `[llama-server, --port, "8080"]`,
	"unit.shell":                          `"npm run dev"`,
	"unit.pid_file":                       "/run/user/1000/nginx.pid",
	"unit.remain_after_exit":              "true",
	"unit.workdir":                        "~/models",
	"unit.env":                            `{CUDA_VISIBLE_DEVICES: "0"}`,
	"unit.ownership":                      "adoptable",
	"unit.reason":                         `"keeps the model loaded across gateway restarts"`,
	"unit.restart":                        "always",
	"unit.restart_sec":                    "2s",
	"unit.restart_max_sec":                "1m",
	"unit.start_limit.burst":              "10",
	"unit.start_limit.interval":           "5m",
	"unit.after":                          "[migrate]",
	"unit.requires":                       "[db]",
	"unit.ready.tcp":                      "127.0.0.1:8080",
	"unit.ready.http":                     "http://127.0.0.1:8080/health",
	"unit.ready.notify":                   "true",
	"unit.ready.log":                      `"listening on"`,
	"unit.timeouts.start":                 "2m",
	"unit.timeouts.stop":                  "10s",
	"unit.timeouts.runtime_max":           "8h",
	"unit.timeouts.watchdog":              "30s",
	"unit.stop_signal":                    "INT",
	"unit.reload_signal":                  "HUP",
	"unit.reload":                         "[nginx, -s, reload]",
	"unit.ports":                          "[8080]",
	"unit.log.path":                       "~/logs/llama.log",
	"unit.log.max_size":                   "50MiB",
	"unit.log.keep":                       "5",
	"unit.schedule":                       `"*/15 * * * *"`,
	"unit.run_budget_seconds":             "850",
	"unit.wrapup_signal":                  "USR1",
	"unit.provider.id":                    "local-reasoning",
	"unit.provider.base_url":              "http://127.0.0.1:8080/v1",
	"unit.provider.api_key_env":           "LOCAL_API_KEY",
	"unit.provider.api_key_file":          "/run/secrets/local-api-key",
	"unit.provider.stale_timeout_seconds": "900",
	"unit.provider.models.<id>.stale_timeout_seconds": "1200",
	"unit.provider.tiers[].above_tokens":              "100000",
	"unit.provider.tiers[].seconds":                   "600",
	"unit.provider.floors[].slug":                     "qwq",
	"unit.provider.floors[].seconds":                  "900",
	"unit.proxy_env":                                  "true",
	"unit.env_file":                                   "[/etc/default/web, -.env]",
	"unit.user":                                       "postgres",
	"unit.group":                                      "postgres",
	"unit.supplementary_groups":                       "[ssl-cert]",
	"unit.umask":                                      `"0027"`,
	"unit.nice":                                       "10",
	"unit.limits.as":                                  "infinity",
	"unit.limits.core":                                "0",
	"unit.limits.cpu":                                 "3600",
	"unit.limits.data":                                "infinity",
	"unit.limits.fsize":                               "infinity",
	"unit.limits.locks":                               "infinity",
	"unit.limits.memlock":                             "65536",
	"unit.limits.msgqueue":                            "819200",
	"unit.limits.nice":                                "0",
	"unit.limits.nofile":                              `"1024:65536"`,
	"unit.limits.nproc":                               "512",
	"unit.limits.rss":                                 "infinity",
	"unit.limits.rtprio":                              "0",
	"unit.limits.rttime":                              "infinity",
	"unit.limits.sigpending":                          "1024",
	"unit.limits.stack":                               "8388608",
	"unit.memory_max":                                 "2GiB",
	"unit.cpu_weight":                                 "50",
	"unit.cpu_max":                                    `"150%"`,
	"unit.tasks_max":                                  "256",

	"config.units":                                            "~/.config/hermes/units",
	"config.state":                                            "~/.local/state/hermes",
	"config.socket":                                           "/run/user/1000/hermes/hermesd.sock",
	"config.role":                                             "worker",
	"config.agent.run_budget_seconds":                         "900",
	"config.agent.local_stream_stale_timeout":                 "600",
	"config.agent.stale_timeout_hard_cap":                     "30m",
	"config.agent.stream_drain_timeout":                       "5",
	"config.providers.<id>.base_url":                          "https://api.openai.com/v1",
	"config.providers.<id>.api_key_env":                       "OPENAI_API_KEY",
	"config.providers.<id>.api_key_file":                      "/etc/hermes/secrets/OPENAI_API_KEY",
	"config.providers.<id>.stale_timeout_seconds":             "300",
	"config.providers.<id>.models.<id>.stale_timeout_seconds": "600",
	"config.providers.<id>.tiers[].above_tokens":              "100000",
	"config.providers.<id>.tiers[].seconds":                   "600",
	"config.providers.<id>.floors[].slug":                     "o3",
	"config.providers.<id>.floors[].seconds":                  "600",
	"config.gateway.listen":                                   "127.0.0.1:7411",
	"config.gateway.allowed_origins":                          "[http://localhost:3000]",
	"config.gateway.max_connections":                          "256",
	"config.gateway.max_request_body":                         "16MiB",
	"config.gateway.max_bodies_in_flight":                     "128MiB",
	"config.gateway.read_header_timeout":                      "10s",
	"config.gateway.body_read_timeout":                        "30s",
	"config.gateway.idle_timeout":                             "60s",
	"config.probes.listen":                                    "127.0.0.1:9465",
	"config.probes.remote":                                    "true",
	"config.metrics.remote":                                   "true",
	"config.metrics.listen":                                   "127.0.0.1:9464",
	"config.metrics.token_file":                               "~/.config/hermes/metrics.token",
	"config.defaults.restart":                                 "always",
	"config.defaults.restart_sec":                             "2s",
	"config.defaults.restart_max_sec":                         "1m",
	"config.defaults.start_limit.burst":                       "10",
	"config.defaults.start_limit.interval":                    "5m",
	"config.defaults.timeouts.start":                          "2m",
	"config.defaults.timeouts.stop":                           "10s",
	"config.defaults.timeouts.runtime_max":                    "0s",
	"config.defaults.timeouts.watchdog":                       "0s",
	"config.defaults.stop_signal":                             "INT",
	"config.defaults.log.max_size":                            "50MiB",
	"config.defaults.log.keep":                                "5",
	"config.defaults.env_file":                                "[/etc/hermes/common.env]",
	"config.defaults.user":                                    "nobody",
	"config.defaults.group":                                   "nogroup",
	"config.defaults.supplementary_groups":                    "[ssl-cert]",
	"config.defaults.umask":                                   `"0027"`,
	"config.defaults.nice":                                    "10",
	"config.defaults.limits.as":                               "infinity",
	"config.defaults.limits.core":                             "0",
	"config.defaults.limits.cpu":                              "3600",
	"config.defaults.limits.data":                             "infinity",
	"config.defaults.limits.fsize":                            "infinity",
	"config.defaults.limits.locks":                            "infinity",
	"config.defaults.limits.memlock":                          "65536",
	"config.defaults.limits.msgqueue":                         "819200",
	"config.defaults.limits.nice":                             "0",
	"config.defaults.limits.nofile":                           `"1024:65536"`,
	"config.defaults.limits.nproc":                            "512",
	"config.defaults.limits.rss":                              "infinity",
	"config.defaults.limits.rtprio":                           "0",
	"config.defaults.limits.rttime":                           "infinity",
	"config.defaults.limits.sigpending":                       "1024",
	"config.defaults.limits.stack":                            "8388608",
	"config.defaults.memory_max":                              "2GiB",
	"config.defaults.cpu_weight":                              "50",
	"config.defaults.cpu_max":                                 `"150%"`,
	"config.defaults.tasks_max":                               "256",
}

// RefKey is one key of the reference.
type RefKey struct {
	Path    string // "unit.timeouts.start"
	Type    string // what it takes, in words
	Default string // "" when none is stated
	Meaning string
	Example string // a YAML value; "" for a block that only groups keys
	Block   bool   // an object whose keys follow
}

// refNode is the part of a JSON Schema the reference reads.
type refNode struct {
	Ref                  string              `json:"$ref"`
	Defs                 map[string]*refNode `json:"$defs"`
	Type                 any                 `json:"type"`
	Description          string              `json:"description"`
	Default              any                 `json:"default"`
	Enum                 []any               `json:"enum"`
	Properties           orderedProps        `json:"properties"`
	AdditionalProperties json.RawMessage     `json:"additionalProperties"`
	Items                *refNode            `json:"items"`
}

// orderedProps keeps the properties in the order of the schema file.
type orderedProps struct {
	names []string
	nodes map[string]*refNode
}

func (o *orderedProps) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	o.nodes = map[string]*refNode{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		var n refNode
		if err := dec.Decode(&n); err != nil {
			return err
		}
		o.names = append(o.names, name)
		o.nodes[name] = &n
	}
	_, err := dec.Token() // }
	return err
}

// Keys lists every key of a generated schema file, depth first in the
// schema's order, with prefix ("unit" or "config").
func Keys(schemaJSON []byte, prefix string) ([]RefKey, error) {
	var root refNode
	if err := json.Unmarshal(schemaJSON, &root); err != nil {
		return nil, err
	}
	var out []RefKey
	walkKeys(&root, root.Defs, prefix, &out)
	return out, nil
}

var defaultSentence = regexp.MustCompile(`Default:? ([^.]+)\.`)

func walkKeys(n *refNode, defs map[string]*refNode, prefix string, out *[]RefKey) {
	for _, name := range n.Properties.names {
		p := n.Properties.nodes[name]
		target, typ := resolve(p, defs)
		key := RefKey{Path: prefix + "." + name, Type: typ, Meaning: p.Description}
		if key.Meaning == "" {
			key.Meaning = target.Description
		}
		if p.Default != nil {
			key.Default = fmt.Sprint(p.Default)
		} else if m := defaultSentence.FindStringSubmatch(key.Meaning); m != nil {
			key.Default = m[1]
		}
		key.Example = Examples[key.Path]
		var sub *refNode
		switch {
		case len(target.Properties.names) > 0:
			sub = target
		case target.Items != nil:
			if it, _ := resolve(target.Items, defs); len(it.Properties.names) > 0 {
				sub, key.Path = it, key.Path+"[]"
				key.Type = "list of mappings"
			}
		case len(target.AdditionalProperties) > 0 && string(target.AdditionalProperties) != "false":
			var ap refNode
			if json.Unmarshal(target.AdditionalProperties, &ap) == nil {
				if it, _ := resolve(&ap, defs); len(it.Properties.names) > 0 {
					sub, key.Path = it, key.Path+".<id>"
					key.Type = "mapping by id"
				}
			}
		}
		if sub != nil {
			key.Block, key.Example = true, ""
			*out = append(*out, key)
			walkKeys(sub, defs, key.Path, out)
			continue
		}
		*out = append(*out, key)
	}
}

// typeWords names the value types of values.go.
var typeWords = map[string]string{
	"Duration": "duration", "DurationOrSeconds": "duration or seconds", "Seconds": "seconds",
	"Size": "size", "Signal": "signal", "Port": "port", "UnitName": "unit name",
	"Schedule": "cron expression", "Arg": "string", "Scalar": "string",
	"Principal": "name or number", "Umask": "octal mask", "Rlimit": "limit",
	"Percent": "percentage", "EnvFiles": "path or list of paths",
}

// resolve follows a $ref and names the type.
func resolve(n *refNode, defs map[string]*refNode) (*refNode, string) {
	if n.Ref != "" {
		name := strings.TrimPrefix(n.Ref, "#/$defs/")
		if d := defs[name]; d != nil {
			if w, ok := typeWords[name]; ok {
				return d, w
			}
			return d, "mapping"
		}
	}
	switch t := n.Type.(type) {
	case string:
		switch {
		case t == "array" && n.Items != nil:
			_, it := resolve(n.Items, defs)
			return n, "list of " + it + "s"
		case t == "object":
			return n, "mapping"
		case len(n.Enum) > 0:
			var ws []string
			for _, e := range n.Enum {
				ws = append(ws, fmt.Sprintf("`%v`", e))
			}
			return n, strings.Join(ws, ", ")
		case t == "boolean":
			return n, "true or false"
		}
		return n, t
	}
	return n, "value"
}

// Reference renders docs/reference.md from the generated schema files.
func Reference(files map[string][]byte) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`# Unit files and hermes.yaml: every key

<!-- Generated by go generate ./schema from schema/*.schema.json; do not edit. -->

Every key a unit file (` + "`NAME.yaml`" + ` in the units directory) and
` + "`hermes.yaml`" + ` accept, what it takes, its default and an example, in the order
of the schema. A block's keys follow it, as dotted paths; ` + "`<id>`" + ` is a name
you choose, ` + "`[]`" + ` an item of a list. Durations are written like ` + "`90s`" + ` or
` + "`1m30s`" + `; sizes like ` + "`10MiB`" + `; signals like ` + "`TERM`" + ` or ` + "`15`" + `.
The defaults of ` + "`hermes.yaml`" + `'s ` + "`defaults:`" + ` block replace the built-in
defaults of the unit keys of the same names for every unit that leaves
them unset.
`)
	units, err := Keys(files["unit.schema.json"], "unit")
	if err != nil {
		return nil, fmt.Errorf("schema: reading unit.schema.json: %w", err)
	}
	unitKeys := map[string]RefKey{} // by the key's name
	for _, k := range units {
		unitKeys[strings.TrimPrefix(k.Path, "unit.")] = k
	}
	for _, part := range []struct{ file, prefix, title string }{
		{"unit.schema.json", "unit", "Unit files"},
		{"config.schema.json", "config", "hermes.yaml"},
	} {
		keys, err := Keys(files[part.file], part.prefix)
		if err != nil {
			return nil, fmt.Errorf("schema: reading %s: %w", part.file, err)
		}
		fmt.Fprintf(&b, "\n## %s\n\n| key | takes | default | meaning | example |\n|---|---|---|---|---|\n", part.title)
		for _, k := range keys {
			name := strings.TrimPrefix(k.Path, part.prefix+".")
			if u, ok := unitKeys[strings.TrimPrefix(name, "defaults.")]; ok && part.prefix == "config" && strings.HasPrefix(name, "defaults.") {
				if k.Meaning == "" {
					k.Meaning = "For every unit that leaves `" + u.Path[len("unit."):] + "` unset. " + u.Meaning
				}
				if k.Default == "" {
					k.Default = u.Default
				}
			}
			if k.Meaning == "" && k.Block {
				k.Meaning = "A block; its keys follow."
			}
			ex := ""
			if k.Example != "" {
				leaf := name[strings.LastIndexAny(name, ".]")+1:]
				ex = "`" + leaf + ": " + k.Example + "`"
			}
			def := k.Default
			if def != "" {
				def = "`" + def + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", name, k.Type, def, cell(k.Meaning), cell(ex))
		}
	}
	return b.Bytes(), nil
}

// cell makes text fit a table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}
