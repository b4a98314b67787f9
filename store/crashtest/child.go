// Package crashtest is the harness of the conformance suites' crash
// tests ([jobstest.RunCrash], [webhooktest.RunCrash]): a backend whose
// state outlives the process ([Durable]), the shared start of every crash
// test ([Begin]), and a child process running one test of the current
// test binary ([Start]), to be killed mid-work. Backends reach it through
// storetest.RunBackend and need not import it themselves.
//
// [jobstest.RunCrash]: https://pkg.go.dev/github.com/validmail/validmail/jobs/jobstest#RunCrash
// [webhooktest.RunCrash]: https://pkg.go.dev/github.com/validmail/validmail/webhook/webhooktest#RunCrash
package crashtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child is a running child test process.
type Child struct {
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan error // holds the exit status once the process has ended
}

// lockedBuffer is the child's output, readable while the child writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Start re-executes the test binary to run only the top-level test named
// test, with env added to the environment. The child's output is kept
// for [Child.Output]. The child is killed, if still running, when t ends.
func Start(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out := new(lockedBuffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, out: out, done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	t.Cleanup(c.Kill)
	return c
}

// Kill ends the child with SIGKILL and waits until it has exited. It may
// be called more than once, and after the child has exited.
func (c *Child) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	c.result()
}

// Wait waits up to d for the child to exit and returns its exit error;
// a child still running after d is killed.
func (c *Child) Wait(d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-timer.C:
		c.Kill()
		return fmt.Errorf("crashtest: still running after %v", d)
	}
}

// Output returns what the child wrote; call it after [Child.Kill] or
// [Child.Wait].
func (c *Child) Output() string {
	c.result()
	return c.out.String()
}

// WaitOutput waits up to d for the child's output to contain s, polling
// every millisecond, and reports whether it did. It returns false at once
// when the child exits without writing s.
func (c *Child) WaitOutput(s string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if strings.Contains(c.out.String(), s) {
			return true
		}
		select {
		case err := <-c.done:
			c.done <- err
			return strings.Contains(c.out.String(), s)
		default:
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}

// result waits for the exit status and leaves it for the next reader.
func (c *Child) result() error {
	err := <-c.done
	c.done <- err
	return err
}
