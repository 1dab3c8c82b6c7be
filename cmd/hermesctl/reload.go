package main

import (
	"context"
	"errors"

	"github.com/hermes-units/hermes/internal/exitcode"
)

// reload UNIT...: the units' own reload (control.Signaller.ReloadUnit),
// beside reload with no unit, which re-reads the unit files (units.go).

// runUnitReload asks each unit named to reload, one after the other,
// printing "reloaded UNIT" for each and stopping at the first failure.
func runUnitReload(ctx context.Context, opts *reloadOptions, names []string) error {
	if opts.dryRun {
		return &exitError{code: exitcode.Usage, err: errors.New("reload: --dry-run plans a re-read of the unit files; name no unit with it")}
	}
	u := &unitsOptions{clientOptions: opts.clientOptions, verb: "reload", done: "reloaded", units: names}
	return u.eachCall(ctx, "", func(ctx context.Context, c *conn, unit string) error { return c.ReloadUnit(ctx, unit) })
}
