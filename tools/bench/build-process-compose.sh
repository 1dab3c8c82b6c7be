#!/bin/sh
# Builds process-compose from a checkout of its source, for make bench-peers.
# Its clipboard module (github.com/f1bonacc1/glippy) is not on every module
# proxy; a local stand-in whose copy operations fail takes its place (the
# bench never copies to a clipboard). The checkout's go.mod gains a replace
# line; nothing else in it changes.
#
#   tools/bench/build-process-compose.sh SRC [OUT]
#
# SRC is the checkout; OUT the binary (default SRC/bin/process-compose).
# Put OUT's directory on PATH when running make bench-peers.
set -eu
if [ $# -lt 1 ] || [ ! -f "$1/go.mod" ]; then
	echo "usage: $0 SRC [OUT]: SRC must be a checkout of process-compose (with its go.mod)" >&2
	exit 2
fi
src=$(cd "$1" && pwd)
out=${2:-$src/bin/process-compose}
stub=$src/.glippy-stub
mkdir -p "$stub"
cat >"$stub/go.mod" <<'MOD'
module github.com/f1bonacc1/glippy

go 1.21
MOD
cat >"$stub/glippy.go" <<'GO'
// Package glippy stands in for the clipboard module: every copy fails.
package glippy

import "errors"

// Method is how a copy was made.
type Method int

// The methods the callers name.
const (
	MethodNone Method = iota
	MethodNative
	MethodOSC52
)

var errNoClipboard = errors.New("no clipboard in this build")

// Set fails: there is no clipboard.
func Set(string) error { return errNoClipboard }

// SetWithMethod fails: there is no clipboard.
func SetWithMethod(string) (Method, error) { return MethodNone, errNoClipboard }
GO
cd "$src"
go mod edit -replace "github.com/f1bonacc1/glippy=$stub"
CGO_ENABLED=0 go build -o "$out" ./
echo "built $out"
