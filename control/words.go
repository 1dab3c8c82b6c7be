package control

import "github.com/hermes-units/hermes/internal/word"

// JobResult is how the latest run of a job went (Job.Result).
type JobResult string

const (
	ResultSuccess        JobResult = "success"         // the last run exited 0
	ResultFailed         JobResult = "failed"          // it failed (and may be restarting)
	ResultBudgetExceeded JobResult = "budget exceeded" // it was stopped at its deadline
	ResultRunning        JobResult = "running"         // it is running now
	ResultStopped        JobResult = "stopped"         // it was stopped by a command, a reload or shutdown
)

var jobResults = word.Strings("job result", ResultSuccess, ResultFailed, ResultBudgetExceeded, ResultRunning, ResultStopped)

// UnmarshalText refuses a result this build does not know.
func (r *JobResult) UnmarshalText(text []byte) error { return jobResults.Unmarshal(r, text) }

// OwnedState is where a kept group stands (OwnedGroup.State).
type OwnedState string

const (
	OwnedKept       OwnedState = "kept"       // its owner lives
	OwnedPersisting OwnedState = "persisting" // a persist_on_release group whose owner is gone
	OwnedReleasing  OwnedState = "releasing"  // released once empty: dropped when its last process exits
)

var ownedStates = word.Strings("kept group state", OwnedKept, OwnedPersisting, OwnedReleasing)

// UnmarshalText refuses a state this build does not know.
func (s *OwnedState) UnmarshalText(text []byte) error { return ownedStates.Unmarshal(s, text) }
