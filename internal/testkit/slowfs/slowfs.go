// Package slowfs mounts a directory again through FUSE, with a delay on
// every lookup, stat, open and directory listing that reaches it, as a
// units directory on a slow network filesystem answers. The kernel
// caches none of its entries or attributes, so each stat of a file costs
// the delay, as it does on a filesystem that must ask a server.
//
// Mounting needs /dev/fuse and the right to mount (root); Mount says
// which is missing, for a test to skip with the reason.
package slowfs

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ErrUnavailable is returned by Mount when this machine cannot mount a
// FUSE filesystem here (no /dev/fuse, or not allowed to mount).
var ErrUnavailable = errors.New("slowfs: cannot mount a FUSE filesystem here")

// FS is a mounted slow view of a directory.
type FS struct {
	Dir    string // where it is mounted
	server *fuse.Server
	delay  time.Duration
	ops    atomic.Int64
	mu     sync.Mutex
	gate   chan struct{}  // closed: not held
	opened map[string]int // opens of files by path in the mount
}

// Mount mounts backing at mountpoint (an existing empty directory), each
// operation delayed by delay. Writes through the mount reach backing
// (and are seen by inotify on the mount); writes made to backing directly
// are not announced on the mount.
func Mount(backing, mountpoint string, delay time.Duration) (*FS, error) {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, err
	}
	f := &FS{Dir: mountpoint, gate: make(chan struct{}), opened: map[string]int{}}
	close(f.gate)
	f.delay = delay
	var none time.Duration
	srv, err := fs.Mount(mountpoint, &node{LoopbackNode: root.(*fs.LoopbackNode), fs: f}, &fs.Options{
		EntryTimeout:    &none,
		AttrTimeout:     &none,
		NegativeTimeout: &none,
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true, // mount(2) itself: no fusermount needed as root
			FsName:            "slowfs",
			Name:              "slowfs",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	f.server = srv
	return f, nil
}

// Ops is how many operations reached the filesystem so far.
func (f *FS) Ops() int64 { return f.ops.Load() }

// Opened is how many times each file (not directory) was opened so far,
// by its path in the mount.
func (f *FS) Opened() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.opened)
}

// Hold makes the operations that reach the filesystem from now wait
// until Release, as a filesystem whose server stopped answering.
func (f *FS) Hold() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.gate:
		f.gate = make(chan struct{})
	default: // held already
	}
}

// Release lets the held operations go on.
func (f *FS) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.gate:
	default:
		close(f.gate)
	}
}

func (f *FS) held() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gate
}

// Unmount releases the held operations and unmounts it, waiting for the
// operations under way. A mount still in use (a process's working
// directory) is detached: it goes once the last user leaves it.
func (f *FS) Unmount() error {
	f.Release()
	if err := f.server.Unmount(); err != nil {
		if derr := detach(f.Dir); derr != nil {
			return fmt.Errorf("%w; detach: %w", err, derr)
		}
	}
	return nil
}

// wait delays one operation, and holds it while the filesystem is held;
// it ends early when the caller gives up (an interrupted system call).
func (f *FS) wait(ctx context.Context) syscall.Errno {
	f.ops.Add(1)
	select {
	case <-f.held():
	case <-ctx.Done():
		return syscall.EINTR
	}
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return 0
	case <-ctx.Done():
		return syscall.EINTR
	}
}

// node is a loopback node whose operations wait first.
type node struct {
	*fs.LoopbackNode
	fs *FS
}

var (
	_ fs.NodeWrapChilder    = (*node)(nil)
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeGetattrer      = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeOpendirHandler = (*node)(nil)
)

func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if l, ok := ops.(*fs.LoopbackNode); ok {
		return &node{LoopbackNode: l, fs: n.fs}
	}
	return ops
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.fs.wait(ctx); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Lookup(ctx, name, out)
}

func (n *node) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if e := n.fs.wait(ctx); e != 0 {
		return e
	}
	return n.LoopbackNode.Getattr(ctx, fh, out)
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fs.wait(ctx); e != 0 {
		return nil, 0, e
	}
	// Counted once it goes through: an open the caller's signal
	// interrupted (EINTR) opened nothing, and the caller opens again.
	n.fs.mu.Lock()
	n.fs.opened[n.Path(nil)]++
	n.fs.mu.Unlock()
	return n.LoopbackNode.Open(ctx, flags)
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.fs.wait(ctx); e != 0 {
		return nil, 0, e
	}
	return n.LoopbackNode.OpendirHandle(ctx, flags)
}
