package ledger

import "github.com/hermes-units/hermes/units"

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

// ParseState parses an entry's state: "", released or adopted.
func ParseState(s string) (State, error) {
	return units.ParseWord("entry state", "released, adopted or none", s, Live, Released, Adopted)
}

// UnmarshalText parses text with ParseState.
func (s *State) UnmarshalText(text []byte) error { return units.UnmarshalWord(s, text, ParseState) }
