package supervisor

import (
	"strconv"
	"testing"

	"github.com/hermes-units/hermes/proc"
)

// TestStoppingIndex: StopAll finds each group of its batch among the
// registrations through one index of them (indexLocked), as findLocked
// finds one: by process group, leader pid and leader start; a group
// registered with another leader start, or not at all, is not found, and
// gets a registration of its own for the stop.
func TestStoppingIndex(t *testing.T) {
	o := &Owner{ownerState: ownerState{regs: map[string]*reg{}}}
	for i := range 3000 {
		g := Group{Unit: "u", PGID: 2_000_000 + i, Leader: proc.Identity{PID: 2_000_000 + i, StartTime: uint64(7 + i)}}
		o.regs["s"+strconv.Itoa(i)] = &reg{id: "s" + strconv.Itoa(i), g: g}
	}
	var orders []StopOrder
	for i := 0; i < 3000; i += 7 {
		orders = append(orders, StopOrder{Group: Group{Unit: "u", PGID: 2_000_000 + i, Leader: proc.Identity{PID: 2_000_000 + i, StartTime: uint64(7 + i)}}})
	}
	stranger := Group{Unit: "u", PGID: 2_000_001, Leader: proc.Identity{PID: 2_000_001, StartTime: 1}} // pid reused: another start
	orders = append(orders, StopOrder{Group: stranger})
	regs, errs := o.stopping(orders)
	for i, s := range orders {
		if errs[i] != nil {
			t.Fatalf("order %d: %v", i, errs[i])
		}
		want := o.findLocked(s.Group)
		if s.Group == stranger {
			if want != nil || regs[i] == nil || regs[i].stopping || regs[i].g.PGID != stranger.PGID {
				t.Errorf("the stranger's group: got %+v, want a registration of its own for the stop", regs[i])
			}
			continue
		}
		if want == nil || regs[i] != want || !want.stopping {
			t.Errorf("group %d: got %p, want the registration findLocked finds (%p), marked stopping", s.Group.PGID, regs[i], want)
		}
	}
}
