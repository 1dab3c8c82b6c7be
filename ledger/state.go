package ledger

import "github.com/hermes-units/hermes/internal/word"

// State is what an owner did with an entry's group after its spawn. The
// file holds it as "state" (omitted for Live); values this build does not
// know make the file corrupt.
type State string

const (
	// Live: the group lives under the owner that spawned it. The zero State.
	Live State = ""
	// Released: its owner let it go (`hermesctl release`, or a survivor no
	// longer declared); nobody owns it until an owner adopts it.
	Released State = "released"
	// Adopted: an owner holds it that did not spawn it (re-adoption at
	// gateway start, `hermesctl adopt`); Owner and Role are that owner's.
	Adopted State = "adopted"
)

var states = word.Strings("entry state", Live, Released, Adopted).Want("released, adopted or none")

// ParseState parses an entry's state: "", released or adopted.
func ParseState(s string) (State, error) { return states.Parse(s) }

// UnmarshalText parses text with ParseState.
func (s *State) UnmarshalText(text []byte) error { return states.Unmarshal(s, text) }
