package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// screen is a minimal terminal: enough of VT100 to replay what the
// progress bar writes (printable text, CR, LF, backspace, erase in line)
// and see what a user would be left with.
type screen struct {
	cols      int
	lines     [][]rune
	row, col  int
	maxLength int // longest line ever written, before wrapping
}

func newScreen(cols int) *screen { return &screen{cols: cols, lines: [][]rune{nil}} }

func (s *screen) write(text string) {
	r := []rune(text)
	for i := 0; i < len(r); i++ {
		switch c := r[i]; {
		case c == '\r':
			s.col = 0
		case c == '\n':
			s.newline()
		case c == '\b':
			s.col = max(0, s.col-1)
		case c == 0x1b && i+1 < len(r) && r[i+1] == '[':
			j := i + 2
			for j < len(r) && (r[j] < 0x40 || r[j] > 0x7e) {
				j++
			}
			if j < len(r) && r[j] == 'K' {
				line := s.lines[s.row]
				switch string(r[i+2 : j]) {
				case "", "0":
					s.lines[s.row] = line[:min(s.col, len(line))]
				case "2":
					s.lines[s.row] = nil
				}
			}
			i = j
		case c < 0x20:
		default:
			if s.col >= s.cols {
				s.newline()
			}
			line := s.lines[s.row]
			for len(line) <= s.col {
				line = append(line, ' ')
			}
			line[s.col] = c
			s.lines[s.row] = line
			s.col++
			s.maxLength = max(s.maxLength, s.col)
		}
	}
}

func (s *screen) newline() {
	s.row++
	s.col = 0
	if s.row == len(s.lines) {
		s.lines = append(s.lines, nil)
	}
}

// text is the screen content with trailing spaces and empty last lines
// removed.
func (s *screen) text() []string {
	var out []string
	for _, l := range s.lines {
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// buildCommand builds the command into dir and returns its path.
func buildCommand(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "bulk")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	build := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// barFrame matches a drawn progress bar: "… 42% |████      | [1s:2s]".
var barFrame = regexp.MustCompile(`\d+% \|[^|]*\| +\[[^\]]*\]`)

// TestTerminalProgressBar runs the built command with stderr on a
// pseudo-terminal and checks that the bar is drawn while the run goes on
// and erased at the end, leaving the summary on a clean screen.
func TestTerminalProgressBar(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	t.Parallel()
	dir := t.TempDir()
	bin := buildCommand(t, dir)
	srv := startDNS(t, 10*time.Millisecond)
	in, out := filepath.Join(dir, "list.txt"), filepath.Join(dir, "out.csv")
	var list strings.Builder
	const rows = 600
	for i := range rows {
		fmt.Fprintf(&list, "u%d@d%d.bulkmail.net\n", i, i)
	}
	if err := os.WriteFile(in, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	const cols = 100
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: cols}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-dns", srv.Addr(), "-concurrency", "4", "-o", out, in)
	cmd.Stderr = tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var raw bytes.Buffer
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(&raw, ptmx) // ends with EIO once the command exits
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("command: %v\n%s", err, raw.String())
	}
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
		t.Fatal("terminal output did not end")
	}

	frames := barFrame.FindAllString(raw.String(), -1)
	if len(frames) < 3 {
		t.Errorf("%d bar frames drawn, want several; output:\n%q", len(frames), raw.String())
	}
	scr := newScreen(cols)
	scr.write(raw.String())
	lines := scr.text()
	if scr.maxLength >= cols {
		t.Errorf("a line reached the terminal width (%d columns): it wrapped", cols)
	}
	for _, l := range lines {
		if barFrame.MatchString(l) || strings.Contains(l, "addr ") {
			t.Errorf("a bar is left on the screen: %q\nscreen:\n%s", l, strings.Join(lines, "\n"))
		}
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Summary") {
		t.Errorf("the screen does not start with the summary:\n%s", strings.Join(lines, "\n"))
	}
	want := fmt.Sprintf(`^%s addresses in [\d.]+m?s \([\d,]+ addresses/s\)$`, thousands(rows))
	if len(lines) == 0 || !regexp.MustCompile(want).MatchString(lines[len(lines)-1]) {
		t.Errorf("last line should match %s:\n%s", want, strings.Join(lines, "\n"))
	}
	t.Logf("%d frames, such as %q\nfinal screen:\n%s", len(frames), frames, strings.Join(lines, "\n"))
}

// TestSignalInterrupts sends SIGINT to the built command while it waits
// for more input and checks that it stops at once, writes the rows
// finished so far in order, prints the summary and exits with 130.
func TestSignalInterrupts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	t.Parallel()
	bin := buildCommand(t, t.TempDir())
	srv := startDNS(t, 0)
	cmd := exec.Command(bin, "-dns", srv.Addr())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	const rows = 50
	for i := range rows {
		fmt.Fprintf(stdin, "u%d@d%d.bulkmail.net\n", i, i)
	}
	time.Sleep(time.Second) // the input stays open: the command waits for more
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the command did not stop on SIGINT")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
	}
	_, got, statuses := statusColumn(t, stdout.String())
	if len(got) != rows {
		t.Errorf("%d rows written, want the %d received before the signal", len(got), rows)
	}
	for i, r := range got {
		if want := fmt.Sprintf("u%d@d%d.bulkmail.net", i, i); r[0] != want || statuses[i] != "LIKELY" {
			t.Errorf("row %d = %q %s, want %s LIKELY", i, r[0], statuses[i], want)
		}
	}
	if !strings.Contains(stderr.String(), "Summary (interrupted") || !strings.Contains(stderr.String(), "bulk: interrupted") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}
