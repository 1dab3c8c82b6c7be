package ledger

import "fmt"

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
	switch st := State(s); st {
	case Live, Released, Adopted:
		return st, nil
	}
	return "", fmt.Errorf("unknown entry state %q: want released, adopted or none", s)
}

// UnmarshalText parses text with ParseState.
func (s *State) UnmarshalText(text []byte) error {
	v, err := ParseState(string(text))
	if err != nil {
		return err
	}
	*s = v
	return nil
}
