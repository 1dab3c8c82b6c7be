package supervisor

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hermes-units/hermes/ledger"
	"github.com/hermes-units/hermes/proc"
)

// refusingPipe is a fake supervisor that refuses the registration of one
// process group and accepts the others.
type refusingPipe struct {
	*fakePipe
	pgid int
}

func (p *refusingPipe) Send(lines [][]byte, reply func(int, error)) {
	p.fakePipe.Send(lines, nil)
	for i, l := range lines {
		var err error
		if f := strings.Fields(string(l)); len(f) > 2 && f[0] == "R" && f[2] == fmt.Sprint(p.pgid) {
			err = &RefusedError{PID: p.pid, ID: f[1], Reason: "refused by the test"}
		}
		if reply != nil {
			reply(i, err)
		}
	}
}

// TestOwnAllOrNone: Own of several groups owns all of them or none. A
// group that fails its checks (its leader exited), or that the supervisor
// refuses, leaves the groups given with it unowned (those registered
// already are taken back) and unrecorded, and the error names the group.
func TestOwnAllOrNone(t *testing.T) {
	t.Run("a check fails", func(t *testing.T) {
		state := t.TempDir()
		o := newTestOwner(t, Options{Mode: ModePGroup, StateDir: state})
		defer o.Close()
		live, _ := sleepGroup(t, "live")
		exited, cmd := sleepGroup(t, "exited")
		cmd.Process.Kill()
		cmd.Wait()
		if err := o.Own(t.Context(), live, exited); !errors.Is(err, proc.ErrGone) || !strings.Contains(err.Error(), "exited") {
			t.Fatalf("Own of a live and an exited group: got %v, want ErrGone naming the exited one", err)
		}
		wantGroups(t, o, 0, "after the failed Own")
		l, err := ledger.Open(state)
		if err != nil {
			t.Fatal(err)
		}
		if es, _ := l.Entries(t.Context()); len(es) != 0 {
			t.Errorf("ledger after the failed Own: %+v, want no entry", es)
		}
		if err := o.Release(t.Context(), live); !errors.Is(err, ErrUnknown) {
			t.Errorf("Release of the live group: got %v, want ErrUnknown (never owned)", err)
		}
	})
	t.Run("the supervisor refuses one", func(t *testing.T) {
		first, _ := sleepGroup(t, "first")
		second, _ := sleepGroup(t, "second")
		launch := func(time.Duration, int, string, string, string, [][]byte, func(int, error)) (deathPipe, error) {
			return &refusingPipe{&fakePipe{pid: 100001, exited: make(chan struct{})}, second.PGID}, nil
		}
		o, err := newOwner(Options{Mode: ModePGroup}, launch, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		err = o.Own(t.Context(), first, second)
		var refused *RefusedError
		if !errors.As(err, &refused) || !strings.Contains(err.Error(), "second") {
			t.Fatalf("Own with the second group refused: got %v, want its RefusedError, naming it", err)
		}
		wantGroups(t, o, 0, "after the refusal (the first taken back)")
		if err := o.Own(t.Context(), first); err != nil {
			t.Errorf("Own of the first group alone afterwards: %v", err)
		}
		wantGroups(t, o, 1, "after Own of the first group alone")
	})
}

// wantGroups checks that o has want groups registered at the moment when
// names.
func wantGroups(t *testing.T, o *Owner, want int, when string) {
	t.Helper()
	if got := o.Status().Groups; got != want {
		t.Errorf("registered groups %s: got %d, want %d", when, got, want)
	}
}
