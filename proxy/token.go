package proxy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hermes-units/hermes/internal/safefile"
)

// The proxy token (SPEC §13): the proxy lends the owner's provider keys
// only to clients that present it as their API key (Authorization: Bearer
// TOKEN, which every OpenAI-compatible client sends from OPENAI_API_KEY).
// It lives in the state directory, mode 0600, owned by hermesd's user:
// whoever can read it could steer hermesd anyway.
//
// hermesd creates it at the first start of the proxy (LoadToken with
// create), hands it to jobs and to units with proxy_env: true, and
// replaces it on `hermesctl proxy rotate-token` (SaveToken, then
// Proxy.SetToken with RotateGrace).

// TokenFile is the token's file name in the state directory.
const TokenFile = "proxy.token"

// RotateGrace is how long the token a rotation replaced is still honoured,
// so that the clients started with it can finish. It lives in hermesd's
// memory only: a restart of hermesd ends it at once.
const RotateGrace = 10 * time.Minute

// ErrToken reports a token file that cannot be used: missing, a symlink,
// not a regular file, owned by another user, readable by others, or
// malformed. The message names the file and what to do.
var ErrToken = errors.New("proxy token file unusable")

// TokenPath is the token file of a state directory.
func TokenPath(stateDir string) string { return filepath.Join(stateDir, TokenFile) }

// NewToken returns a fresh random token (130 bits of entropy).
func NewToken() string { return "hermes-" + rand.Text() }

// LoadToken reads the token of stateDir. With create, a missing file is
// created with a fresh token: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, so
// that neither a planted file nor a planted link is ever used or written
// through. The file is opened without following a symlink and must be a
// regular file of ours that no other user can read; anything else is an
// ErrToken error saying what to fix.
func LoadToken(stateDir string, create bool) (string, error) {
	path := TokenPath(stateDir)
	tok, err := readToken(path)
	if !create || !errors.Is(err, os.ErrNotExist) {
		return tok, err
	}
	tok = NewToken()
	if err := writeNew(path, tok); err != nil {
		if errors.Is(err, os.ErrExist) { // created by someone else meanwhile
			return readToken(path)
		}
		return "", err
	}
	return tok, nil
}

// SaveToken replaces the token of stateDir with tok: written to a new file
// (O_EXCL, no symlink followed) and renamed over the old one, so that a
// reader sees the old token or the new, never a part.
func SaveToken(stateDir, tok string) error {
	path := TokenPath(stateDir)
	if err := safefile.Replace(path, filepath.Base(path)+".new-*", []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("%w: replace %s: %w; check that the state directory exists and is yours", ErrToken, path, err)
	}
	_ = safefile.SyncDir(stateDir) // the token is in place; only a power cut could undo it
	return nil
}

func writeNew(path, tok string) error {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("create %s: %w", path, os.ErrExist)
		}
		return fmt.Errorf("%w: create %s: %w; check that the state directory exists and is yours", ErrToken, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	_, err = io.WriteString(f, tok+"\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%w: write %s: %w", ErrToken, path, err)
	}
	return nil
}

// readToken reads and checks the token file; a missing file is an error
// wrapping os.ErrNotExist.
func readToken(path string) (string, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return "", fmt.Errorf("%w: %s does not exist: hermesd creates it when it starts the provider proxy: %w", ErrToken, path, os.ErrNotExist)
	case errors.Is(err, unix.ELOOP):
		return "", fmt.Errorf("%w: %s is a symbolic link; the token is never read through a link: remove it (hermesd creates a new token)", ErrToken, path)
	case err != nil:
		return "", fmt.Errorf("%w: open %s: %w", ErrToken, path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return "", fmt.Errorf("%w: stat %s: %w", ErrToken, path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return "", fmt.Errorf("%w: %s is not a regular file: remove it (hermesd creates a new token)", ErrToken, path)
	case int(st.Uid) != os.Geteuid():
		return "", fmt.Errorf("%w: %s belongs to uid %d, not to uid %d who runs this: remove it (hermesd creates a new token)", ErrToken, path, st.Uid, os.Geteuid())
	case st.Mode&0o077 != 0:
		return "", fmt.Errorf("%w: %s is readable or writable by other users (mode %04o), who could use your API keys through the proxy: remove it and restart hermesd for a new token", ErrToken, path, st.Mode&0o777)
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", fmt.Errorf("%w: read %s: %w", ErrToken, path, err)
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 || len(tok) > 128 || strings.ContainsFunc(tok, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		return "", fmt.Errorf("%w: %s does not hold a token (16 to 128 letters, digits, - or _): remove it (hermesd creates a new token)", ErrToken, path)
	}
	return tok, nil
}

// tokens is the proxy's current token and, after a rotation, the one it
// replaced until its grace ends. Tokens are kept as SHA-256 digests, so
// that every comparison is of 32 bytes in constant time whatever the
// client sent.
type tokens struct {
	mu        sync.Mutex
	cur       [32]byte  // guarded by mu
	prev      [32]byte  // guarded by mu
	prevUntil time.Time // guarded by mu; zero: no previous token
}

func (t *tokens) set(tok string, grace time.Duration, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if grace > 0 && t.cur != [32]byte{} {
		t.prev, t.prevUntil = t.cur, now.Add(grace)
	} else {
		t.prev, t.prevUntil = [32]byte{}, time.Time{}
	}
	t.cur = sha256.Sum256([]byte(tok))
}

// valid reports whether presented is the current token, or the previous
// one within its grace.
func (t *tokens) valid(presented string, now time.Time) bool {
	h := sha256.Sum256([]byte(presented))
	t.mu.Lock()
	cur, prev, until := t.cur, t.prev, t.prevUntil
	t.mu.Unlock()
	ok := subtle.ConstantTimeCompare(h[:], cur[:])
	okPrev := subtle.ConstantTimeCompare(h[:], prev[:])
	return ok == 1 || (okPrev == 1 && now.Before(until))
}
