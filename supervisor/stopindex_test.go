package supervisor

import (
	"strconv"
	"testing"

	"github.com/hermes-units/hermes/proc"
)

// TestStoppingIndex: StopAll finds each group of its batch among the
// registrations through their index (byGroup), as findLocked finds one:
// by process group, leader pid and leader start; a group registered with
// another leader start, or not at all, is not found, and gets a
// registration of its own for the stop.
func TestStoppingIndex(t *testing.T) {
	o := &Owner{ownerState: ownerState{regs: map[string]*reg{}, pending: map[*reg]bool{}, byGroup: map[groupKey][]*reg{}}}
	for i := range 3000 {
		g := Group{Unit: "u", PGID: 2_000_000 + i, Leader: proc.Identity{PID: 2_000_000 + i, StartTime: uint64(7 + i)}}
		o.addRegLocked(&reg{id: "s" + strconv.Itoa(i), g: g})
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

// TestGroupIndex: findLocked finds a registration by its group from the
// moment it is registered to the moment it is dropped, through a spawn's
// group set once its leader runs (setGroupLocked), and two registrations
// of one group (an orphan's, then a spawn's) are each found until each is
// dropped; nothing is left in the index once every registration is gone.
func TestGroupIndex(t *testing.T) {
	o := &Owner{ownerState: ownerState{regs: map[string]*reg{}, pending: map[*reg]bool{}, byGroup: map[groupKey][]*reg{}}}
	g := Group{Unit: "web", PGID: 3_000_001, Leader: proc.Identity{PID: 3_000_001, StartTime: 42}}
	spawn := &reg{id: "s1", g: Group{Unit: "web"}} // registered before its leader runs (cgroup mode)
	o.addRegLocked(spawn)
	if r := o.findLocked(g); r != nil {
		t.Fatalf("a spawn whose leader is not started yet was found by its future group: %+v", r)
	}
	o.setGroupLocked(spawn, g.PGID, g.Leader)
	if r := o.findLocked(g); r != spawn {
		t.Fatalf("after its leader started, findLocked = %p, want the spawn's registration %p", r, spawn)
	}
	if r := o.findLocked(Group{PGID: g.PGID, Leader: proc.Identity{PID: g.Leader.PID, StartTime: 41}}); r != nil {
		t.Errorf("a group of the same pid with another leader start was found: %+v", r)
	}
	orphan := &reg{id: "x2", g: g, orphan: true}
	o.addRegLocked(orphan)
	o.deleteRegLocked(spawn)
	if r := o.findLocked(g); r != orphan {
		t.Errorf("with the spawn dropped, findLocked = %p, want the other registration of the group %p", r, orphan)
	}
	o.deleteRegLocked(orphan)
	if r := o.findLocked(g); r != nil || len(o.byGroup) != 0 {
		t.Errorf("with every registration dropped, findLocked = %p and the index holds %d groups, want nil and 0", r, len(o.byGroup))
	}
	unregistered := &reg{id: "s3"}
	o.setGroupLocked(unregistered, g.PGID, g.Leader)
	if r := o.findLocked(g); r != nil {
		t.Errorf("a registration not added was found once its group was set: %+v", r)
	}
}

// TestScanViewSized: the view a scan takes of the registrations is built
// into maps sized for them, not grown one registration at a time: a
// scan in pgroup mode takes one, several at each unit's stop.
func TestScanViewSized(t *testing.T) {
	o := &Owner{ownerState: ownerState{regs: map[string]*reg{}, pending: map[*reg]bool{}, byGroup: map[groupKey][]*reg{}}}
	for i := range 3000 {
		g := Group{Unit: "u", PGID: 2_000_000 + i, Leader: proc.Identity{PID: 2_000_000 + i, StartTime: uint64(7 + i)}}
		o.addRegLocked(&reg{id: "s" + strconv.Itoa(i), key: "k" + strconv.Itoa(i), mark: uint64(1 + i), session: 2_000_000 + i, g: g})
	}
	var sn *scanView
	allocs := testing.AllocsPerRun(5, func() { sn = o.snapshotLocked() })
	if len(sn.known) != 3000 || len(sn.keys) != 3000 || len(sn.marks) != 3000 || len(sn.sessions) != 3000 || len(sn.spawns) != 3000 {
		t.Fatalf("the view holds %d groups, %d keys, %d marks, %d sessions, %d spawns; want 3000 of each", len(sn.known), len(sn.keys), len(sn.marks), len(sn.sessions), len(sn.spawns))
	}
	// A map sized for its 3000 entries is allocated once (its groups);
	// one grown to them again at each doubling.
	if allocs > 90 {
		t.Errorf("a view of 3000 registrations took %.0f allocations, want under 90 (45 sized, 143 grown, here): its maps grow as they fill", allocs)
	}
	t.Logf("%.0f allocations", allocs)
}
