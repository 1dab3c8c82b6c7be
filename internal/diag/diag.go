// Package diag is an error a person reads, as data: what happened and
// where (its summary) apart from what to do about it (its detail), so that
// each surface renders them in its own place: the control API's ErrorBody
// carries both, hermesctl prints the summary and the detail indented below
// it, a log line or a status row the one text of Error.
package diag

import (
	"errors"
	"strings"
)

// Error is a failure with its fix. Its text is its summary (Kind, Where
// and What, joined by ": "), then "; " and Fix when there is one.
type Error struct {
	Kind  error  // the sentinel it matches (errors.Is), first in its text; nil for none
	Where string // the unit, file or setting concerned; empty when What names it
	What  string // what happened, and why when it is not plain
	Fix   string // what to do; empty when there is nothing to do
}

func (e *Error) Error() string {
	if e.Fix == "" {
		return e.summary()
	}
	return e.summary() + "; " + e.Fix
}

func (e *Error) Unwrap() error { return e.Kind }

// Parts is e's summary and its detail (Fix).
func (e *Error) Parts() (summary, detail string) { return e.summary(), e.Fix }

func (e *Error) summary() string {
	s := e.What
	if e.Where != "" {
		s = e.Where + ": " + s
	}
	if e.Kind != nil {
		s = e.Kind.Error() + ": " + s
	}
	return s
}

// A parted error says its summary and its detail apart; its text holds
// both. *Error is one, and so is control.Error, an error as the control
// API carried it.
type parted interface {
	error
	Parts() (summary, detail string)
}

// Split is err's text as a summary and a detail: the detail of the first
// parted error in err's chain, and err's text with that error's text
// replaced by its summary (what the wrapping added around it stays). An
// error with no parted one, or whose parted one has no detail, is its
// whole text and no detail.
func Split(err error) (summary, detail string) {
	full := err.Error()
	var p parted
	if !errors.As(err, &p) {
		return full, ""
	}
	sum, det := p.Parts()
	own := p.Error()
	i := strings.LastIndex(full, own)
	if det == "" || i < 0 {
		return full, ""
	}
	return full[:i] + sum + full[i+len(own):], det
}
