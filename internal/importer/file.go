package importer

// File is a unit file as an import writes it: the unit keys the
// converters map to, in the order of the unit reference (units.UnitKeys),
// each value as it is to be written; Render writes the keys set. What a
// key takes is the units decoder's: the tests load every imported unit
// with it.
type File struct {
	Description     string            `json:"description,omitempty"`
	Type            string            `json:"type,omitempty"`
	Command         []string          `json:"command,omitempty"`
	Shell           string            `json:"shell,omitempty"`
	PIDFile         string            `json:"pid_file,omitempty"`
	RemainAfterExit bool              `json:"remain_after_exit,omitempty"`
	Workdir         string            `json:"workdir,omitempty"`
	Env             map[string]string `json:"env,omitempty"`

	EnvFile             []string          `json:"env_file,omitempty"`
	User                string            `json:"user,omitempty"`
	Group               string            `json:"group,omitempty"`
	SupplementaryGroups []string          `json:"supplementary_groups,omitempty"`
	Umask               string            `json:"umask,omitempty"`
	Nice                *int              `json:"nice,omitempty"`
	Limits              map[string]string `json:"limits,omitempty"` // by resource (units.RlimitNames)
	MemoryMax           string            `json:"memory_max,omitempty"`
	CPUWeight           int               `json:"cpu_weight,omitempty"`
	CPUMax              string            `json:"cpu_max,omitempty"`
	TasksMax            int               `json:"tasks_max,omitempty"`

	Restart       string      `json:"restart,omitempty"`
	RestartSec    string      `json:"restart_sec,omitempty"`
	RestartMaxSec string      `json:"restart_max_sec,omitempty"`
	StartLimit    *StartLimit `json:"start_limit,omitempty"`
	After         []string    `json:"after,omitempty"`
	Requires      []string    `json:"requires,omitempty"`
	Ready         *Ready      `json:"ready,omitempty"`
	Timeouts      *Timeouts   `json:"timeouts,omitempty"`
	StopSignal    string      `json:"stop_signal,omitempty"`
	ReloadSignal  string      `json:"reload_signal,omitempty"`
	Reload        []string    `json:"reload,omitempty"`
	Log           *Log        `json:"log,omitempty"`
	Schedule      string      `json:"schedule,omitempty"`
}

// StartLimit is a File's start_limit: block.
type StartLimit struct {
	Burst    int    `json:"burst,omitempty"`
	Interval string `json:"interval,omitempty"`
}

// Ready is a File's ready: block.
type Ready struct {
	HTTP   string `json:"http,omitempty"`
	Notify bool   `json:"notify,omitempty"`
	Log    string `json:"log,omitempty"`
}

// Timeouts is a File's timeouts: block.
type Timeouts struct {
	Start      string `json:"start,omitempty"`
	Stop       string `json:"stop,omitempty"`
	RuntimeMax string `json:"runtime_max,omitempty"`
	Watchdog   string `json:"watchdog,omitempty"`
}

// Log is a File's log: block.
type Log struct {
	Path string `json:"path,omitempty"`
}
