package testkit

import (
	"os"
	"testing"
)

// Pipe returns the read and write ends of a new pipe, both closed when t
// ends; a test closes the write end itself to give the reader EOF (a
// second Close is harmless).
func Pipe(t testing.TB) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Close()
		w.Close()
	})
	return r, w
}
