package units

import "slices"

// The keys each YAML block accepts, in the order the canonical rendering
// writes them. The decoder rejects any other key; a test checks that the
// schema mirror (shape.go) declares exactly these, so they cannot drift.
// A block decoded through a table (keyed) has its keys from that table.
var (
	unitKeys        = unitFields.keys()
	startLimitKeys  = startLimitFields.keys()
	readyKeys       = readyFields.keys()
	timeoutsKeys    = timeoutsFields.keys()
	logKeys         = logFields.keys()
	unitProvKeys    = providerFields.keys()
	providerKeys    = providerFields[1:].keys()
	modelKeys       = []string{"stale_timeout_seconds"}
	tierKeys        = []string{"above_tokens", "seconds"}
	floorKeys       = []string{"slug", "seconds"}
	configKeys      = []string{"units", "state", "socket", "role", "agent", "providers", "gateway", "metrics", "probes", "defaults"}
	agentKeys       = agentFields.keys()
	gatewayKeys     = gatewayFields.keys()
	metricsKeys     = metricsFields.keys()
	probesKeys      = probesFields.keys()
	defaultsKeys    = defaultsFields.keys()
	defaultsLogKeys = logFields[1:].keys()
)

// KnownKeys maps each YAML block to the keys the decoder accepts there, for
// the schema package's drift test. Block paths start at "unit" or "config";
// ".*" stands for a map key chosen by the user (a provider or model id) and
// "[]" for a list item.
func KnownKeys() map[string][]string {
	out := map[string][]string{
		"unit":             unitKeys,
		"unit.start_limit": startLimitKeys,
		"unit.ready":       readyKeys,
		"unit.timeouts":    timeoutsKeys,
		"unit.log":         logKeys,
		"unit.provider":    unitProvKeys,
		"unit.limits":      RlimitNames,

		"config":                      configKeys,
		"config.agent":                agentKeys,
		"config.providers.*":          providerKeys,
		"config.gateway":              gatewayKeys,
		"config.metrics":              metricsKeys,
		"config.probes":               probesKeys,
		"config.defaults":             defaultsKeys,
		"config.defaults.start_limit": startLimitKeys,
		"config.defaults.timeouts":    timeoutsKeys,
		"config.defaults.log":         defaultsLogKeys,
		"config.defaults.limits":      RlimitNames,
	}
	for _, p := range []string{"unit.provider", "config.providers.*"} {
		out[p+".models.*"] = modelKeys
		out[p+".tiers[]"] = tierKeys
		out[p+".floors[]"] = floorKeys
	}
	for k, v := range out {
		out[k] = slices.Clone(v)
	}
	return out
}
