package crashtest_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/store/crashtest"
)

const envMode = "CHILDTEST_MODE"

// TestChildProcess is the child of TestStart; it behaves as envMode says.
func TestChildProcess(t *testing.T) {
	switch os.Getenv(envMode) {
	case "":
		t.Skip("the child process of TestStart")
	case "ok":
		t.Log("hello from the child")
	case "fail":
		t.Fatal("failing on purpose")
	case "hang":
		time.Sleep(time.Minute)
	}
}

func TestStart(t *testing.T) {
	if os.Getenv(envMode) != "" {
		t.Skip("in a child process")
	}
	t.Parallel()
	tests := []struct {
		mode    string
		wait    time.Duration
		wantErr bool
		output  string
	}{
		{"ok", 30 * time.Second, false, "hello from the child"},
		{"fail", 30 * time.Second, true, "failing on purpose"},
		{"hang", 200 * time.Millisecond, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			c := crashtest.Start(t, "TestChildProcess", envMode+"="+tt.mode)
			start := time.Now()
			err := c.Wait(tt.wait)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Wait: %v, want an error: %v\n%s", err, tt.wantErr, c.Output())
			}
			if time.Since(start) > 20*time.Second {
				t.Fatalf("Wait took %v", time.Since(start))
			}
			if !strings.Contains(c.Output(), tt.output) {
				t.Fatalf("output %q lacks %q", c.Output(), tt.output)
			}
			c.Kill() // after exit: a no-op
			c.Kill()
		})
	}
}
