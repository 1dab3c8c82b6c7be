//go:build linux || darwin

package proc

import "fmt"

// ageable is what Age asks of id on every platform before it reads a
// clock: a pid, and a boot id that is this boot's or none.
func (id Identity) ageable() error {
	if id.PID <= 0 {
		return fmt.Errorf("pid %d: no process, no age", id.PID)
	}
	if id.BootID != "" {
		if boot, err := BootID(); err != nil || boot != id.BootID {
			return fmt.Errorf("process %s: started in another boot (%s), or this boot's id is unreadable", id, id.BootID)
		}
	}
	return nil
}
