package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// children maps a -child name to the function that plays it. Each section's
// file adds its own entries from an init function.
var children = map[string]func(args []string) int{}

func runChild(name string, args []string) int {
	f, ok := children[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown child %q\n", name)
		return 2
	}
	return f(args)
}

// startPiped starts the bench's child name with args, in the bench's
// environment with env added; its stdin and stdout are pipes to the
// caller, its stderr the bench's. The caller closes stdin and waits for
// cmd.
func startPiped(ctx context.Context, name string, env []string, args ...string) (cmd *exec.Cmd, stdin io.WriteCloser, stdout io.ReadCloser, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd = exec.CommandContext(ctx, exe, append([]string{"-child", name}, args...)...)
	cmd.Stderr = os.Stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, nil, err
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, err
	}
	return cmd, stdin, stdout, nil
}
