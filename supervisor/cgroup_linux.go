package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cgroupsAvailable: Linux has cgroups; openCgroupTree looks for a
// writable v2 hierarchy.
func cgroupsAvailable() error { return nil }

// intoCgroup has the child start in the cgroup whose directory is open as
// fd (clone3's CLONE_INTO_CGROUP).
func intoCgroup(attr *syscall.SysProcAttr, fd int) error {
	attr.UseCgroupFD, attr.CgroupFD = true, fd
	return nil
}

// cgroupEvents tells its waiters when the cgroup.events file of a cgroup
// they watch changes: the kernel rewrites it (and inotify reports
// IN_MODIFY) when "populated" flips, so the end of a group is an event,
// not something to poll for. One inotify instance serves every watch; it
// is read by one goroutine parked in the netpoller (no thread held), which
// close stops and joins. A stop batch (StopAll) makes one and closes it
// when its last group is done.
type cgroupEvents struct {
	f    *os.File
	done chan struct{} // closed when run returned

	mu   sync.Mutex
	subs map[int32][]chan struct{} // guarded by mu; by watch descriptor
}

// newCgroupEvents opens the inotify instance and starts its reader.
func newCgroupEvents() (*cgroupEvents, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	e := &cgroupEvents{f: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{}), subs: map[int32][]chan struct{}{}}
	go e.run()
	return e, nil
}

// watch returns a channel that receives (buffered, coalesced) after each
// change of dir's cgroup.events, and the function that ends the watch. A
// change before watch returned is not reported: the caller looks at the
// file after watch, then waits.
func (e *cgroupEvents) watch(dir string) (<-chan struct{}, func(), error) {
	rc, err := e.f.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	var wd int
	var werr error
	if err := rc.Control(func(fd uintptr) {
		wd, werr = unix.InotifyAddWatch(int(fd), filepath.Join(dir, "cgroup.events"), unix.IN_MODIFY)
	}); err != nil {
		return nil, nil, err
	}
	if werr != nil {
		return nil, nil, werr
	}
	ch := make(chan struct{}, 1)
	e.mu.Lock()
	e.subs[int32(wd)] = append(e.subs[int32(wd)], ch)
	e.mu.Unlock()
	cancel := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		subs := slices.DeleteFunc(e.subs[int32(wd)], func(c chan struct{}) bool { return c == ch })
		if len(subs) > 0 {
			e.subs[int32(wd)] = subs
			return
		}
		delete(e.subs, int32(wd))
		// The same file watched again gets the same descriptor back: it
		// is removed only once nobody watches it (a removed cgroup's
		// watch is gone already: IN_IGNORED).
		rc.Control(func(fd uintptr) { unix.InotifyRmWatch(int(fd), uint32(wd)) })
	}
	return ch, cancel, nil
}

// run reads events until close and wakes the watchers of each.
func (e *cgroupEvents) run() {
	defer close(e.done)
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := e.f.Read(buf)
		if err != nil {
			return // closed
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			off += unix.SizeofInotifyEvent + int(ev.Len)
			e.mu.Lock()
			for _, ch := range e.subs[ev.Wd] {
				nudge(ch)
			}
			e.mu.Unlock()
		}
	}
}

// close stops the reader and joins it; the watches go with the instance.
func (e *cgroupEvents) close() {
	e.f.Close()
	<-e.done
}
