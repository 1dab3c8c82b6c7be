package notify

import (
	"errors"

	"github.com/hermes-units/hermes/internal/word"
)

// Mode is how units reach hermesd with sd_notify.
type Mode string

const (
	// ModeShared is one NOTIFY_SOCKET for every unit (Listen, Server): a
	// message is the unit's whose process group holds the sender, which
	// only SCM_CREDENTIALS tells, so it is Linux's.
	ModeShared Mode = "shared"
	// ModeUnit is one NOTIFY_SOCKET per unit run (ListenDir, Sockets): a
	// message is the unit's whose socket it arrived on. It needs nothing
	// of the kernel but a datagram socket, so it is the only mode off
	// Linux; on Linux it is chosen with ModeEnv.
	ModeUnit Mode = "unit"
)

// ModeEnv names the variable of hermesd's environment that chooses the
// mode (ParseMode); unset, the platform's default applies.
const ModeEnv = "HERMES_NOTIFY_MODE"

// ErrMode reports a mode that is not one of ModeShared and ModeUnit.
var ErrMode = errors.New("unknown notify mode")

// ParseMode parses a Mode; "" is the platform's default (ModeShared on
// Linux, ModeUnit elsewhere). Another value is refused with ErrMode.
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return defaultMode, nil
	}
	return modeWords.Parse(s)
}

var modeWords = word.Strings(ModeEnv, ModeShared, ModeUnit).Wrap(ErrMode)
