package importer

import (
	"maps"
	"strconv"
	"strings"

	"github.com/hermes-units/hermes/units"
)

// execKeys map systemd's identity, limit and environment file options to
// the unit's exec keys (units.Exec). They join serviceKeys at init.
var execKeys = map[string]func(*sdConv, string, string){
	"User":  func(c *sdConv, k, v string) { c.f.User = c.principal(k, v) },
	"Group": func(c *sdConv, k, v string) { c.f.Group = c.principal(k, v) },
	"SupplementaryGroups": func(c *sdConv, k, v string) {
		if v == "" {
			c.f.SupplementaryGroups = nil // an empty assignment resets the list
			return
		}
		for _, g := range strings.Fields(v) {
			if p := c.principal(k, g); p != "" {
				c.f.SupplementaryGroups = append(c.f.SupplementaryGroups, p)
			}
		}
	},
	"UMask": func(c *sdConv, k, v string) {
		if n, err := strconv.ParseUint(v, 8, 32); c.valid(err == nil && n <= 0o777, k, v, "%s is not an octal mask; left out") {
			c.f.Umask = v
		}
	},
	"Nice": func(c *sdConv, k, v string) {
		if n, err := strconv.Atoi(v); c.valid(err == nil && n >= -20 && n <= 19, k, v, "%s is not a niceness from -20 to 19; left out") {
			c.f.Nice = &n
		}
	},
	"EnvironmentFile": func(c *sdConv, k, v string) {
		if v == "" {
			c.f.EnvFile = nil // an empty assignment resets the list
			return
		}
		c.f.EnvFile = append(c.f.EnvFile, v)
	},
	"MemoryMax": func(c *sdConv, k, v string) {
		if sz, err := units.ParseSize(strings.TrimSuffix(v, "B")); c.valid(err == nil && sz > 0, k, v, "%s: memory_max takes bytes or a size like 512M (no infinity, no percentage); left out") {
			c.f.MemoryMax = v
		}
	},
	"CPUWeight": func(c *sdConv, k, v string) {
		if n, err := strconv.Atoi(v); c.valid(err == nil && n >= 1 && n <= units.MaxCPUWeight, k, v, "%s: cpu_weight takes 1 to %d; left out", units.MaxCPUWeight) {
			c.f.CPUWeight = n
		}
	},
	"CPUQuota": func(c *sdConv, k, v string) {
		n, err := strconv.Atoi(strings.TrimSuffix(v, "%"))
		if c.valid(err == nil && strings.HasSuffix(v, "%") && n >= 1 && n <= units.MaxCPUMax, k, v, "%s: cpu_max takes a percentage of one CPU like 50%%; left out") {
			c.f.CPUMax = v
		}
	},
	"TasksMax": func(c *sdConv, k, v string) {
		if n, err := strconv.Atoi(v); c.valid(err == nil && n >= 1 && n <= units.MaxTasks, k, v, "%s: tasks_max takes a number of tasks (no infinity, no percentage); left out") {
			c.f.TasksMax = n
		}
	},
}

// rlimitKeys are systemd's Limit*= options, by the resource they name.
var rlimitKeys = map[string]string{
	"LimitAS": "as", "LimitCORE": "core", "LimitCPU": "cpu", "LimitDATA": "data", "LimitFSIZE": "fsize",
	"LimitLOCKS": "locks", "LimitMEMLOCK": "memlock", "LimitMSGQUEUE": "msgqueue", "LimitNICE": "nice",
	"LimitNOFILE": "nofile", "LimitNPROC": "nproc", "LimitRSS": "rss", "LimitRTPRIO": "rtprio",
	"LimitRTTIME": "rttime", "LimitSIGPENDING": "sigpending", "LimitSTACK": "stack",
}

func init() {
	maps.Copy(serviceKeys, execKeys)
	for k, res := range rlimitKeys {
		serviceKeys[k] = func(c *sdConv, key, v string) { c.limit(key, res, v) }
	}
}

// principal takes a user or group as written; specifiers were expanded.
func (c *sdConv) principal(key, v string) string {
	if v == "" || strings.ContainsAny(v, ": \t/") {
		c.n.add(key, "%q is not a user or group name; left out", v)
		return ""
	}
	return v
}

// valid reports ok; when it is false, v of key is noted as left out: why
// says what the key takes, a format of v and then args.
func (c *sdConv) valid(ok bool, key, v, why string, args ...any) bool {
	if !ok {
		c.n.add(key, why, append([]any{v}, args...)...)
	}
	return ok
}

// limit maps one Limit*= option: numbers, infinity and soft:hard as
// hermes reads them; a value with a unit (1K, 2s) is left out, said.
func (c *sdConv) limit(key, res, v string) {
	if _, err := units.ParseRlimit(v); !c.valid(err == nil, key, v, "%s: limits.%s takes a number, infinity or soft:hard (no units); left out", res) {
		return
	}
	if c.f.Limits == nil {
		c.f.Limits = map[string]string{}
	}
	c.f.Limits[res] = v
}
