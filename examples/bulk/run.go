package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/maphash"
	"io"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
	"github.com/validmail/validmail/httpapi/client"
	"github.com/validmail/validmail/jobs/lists/charset"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1 // usage, input or output error
	exitInterrupted = 130
)

const usageText = `Usage: bulk [flags] [FILE]

Validates every address of a mailing list and writes the list back with the
verdict of each address. FILE is read from standard input when absent or "-".

Input
  Plain text, one address per line, or CSV. CSV is recognised by a header
  row with a column named email, e-mail, email_address, mail (any case,
  spaces and punctuation ignored), by a first row whose fields (separated
  by , ; TAB or |) include one with an "@", or by -column. The file is
  read as UTF-8, UTF-16 with a byte order mark, else line by line as
  UTF-8 or Windows-1252 (Excel's "CSV (Comma delimited)"), and written as
  UTF-8; CRLF line ends are accepted. Spaces around an address
  are ignored. Blank lines are skipped in both formats; a CSV row that is
  not blank is always kept, even when its email field is empty.
  A CSV row that does not parse (a stray or unclosed quote) is reported
  on stderr with its line number and kept in the output, its fields read
  leniently, with status INVALID_FORMAT; the run goes on.

Output
  csv:   the input fields, then the columns status, score, reason,
         did_you_mean, is_disposable, is_role_based, is_free, provider,
         domain_exists, mx_records, alias, canonical (those of every CSV
         of results, the API's and the console's too; a name the input
         already uses gets a "validmail_" prefix), then any fields beyond
         the header's width. Plain text input gives the column "email";
         CSV input without a header gives field1..fieldN.
  jsonl: one object per row: {"line":N, "row":{header: field...} or
         "fields":[...], "email":..., "result":{validation result}}.
  Rows are written in input order as their results arrive.

Progress and summary
  On a terminal, stderr shows a progress bar (rate, counts by status, and
  an ETA when the input is a regular file); otherwise a progress line
  every 2 seconds. A summary table ends the run: counts and shares by
  status, top providers, time taken and addresses per second.

Validation runs in this process with the emailcheck library, querying the
nameservers of -dns (default: those of /etc/resolv.conf); results carry
meta.source "api", as any direct call of the library does. Ctrl-C stops the run: the rows finished so far are
written, the summary is printed, and the exit code is 130.
Exit codes: 0 success, 1 usage or I/O error, 130 interrupted.

Flags
`

// options are the parsed command line.
type options struct {
	dns         []string
	concurrency int
	timeout     time.Duration
	only        map[emailcheck.Status]bool // nil: keep every row
	dedupe      bool
	format      string
	out         string
	column      string
	quiet       bool
	privateMX   bool
	smtpProbe   bool
	smtp        smtpprobe.Config
	api, key    string // a remote deployment instead of the validator in-process
	file        string // "" or "-" for stdin

	progressEvery time.Duration // between plain progress lines
}

// parseArgs parses the command line; errors are usage errors, and
// flag.ErrHelp means -help was asked for.
func parseArgs(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bulk", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usageText)
		fs.PrintDefaults()
	}
	dns := fs.String("dns", "", "comma-separated nameservers as `host:port` (default: /etc/resolv.conf)")
	fs.IntVar(&o.concurrency, "concurrency", emailcheck.DefaultConcurrency, "addresses validated at once")
	fs.DurationVar(&o.timeout, "timeout", emailcheck.DefaultQueryTimeout, "timeout of one DNS query")
	only := fs.String("only", "", "write only rows with these `STATUS`es, comma-separated, of LIKELY, DISPOSABLE, NO_MX_RECORDS, UNKNOWN, INVALID_DOMAIN, INVALID, INVALID_FORMAT; the summary still counts every row")
	fs.BoolVar(&o.dedupe, "dedupe", false, "validate and write each distinct address (compared case-insensitively) once, at its first occurrence; later rows with it are dropped and counted as duplicates (memory grows by about 20 bytes per distinct address)")
	fs.StringVar(&o.format, "format", "csv", "output format: csv or jsonl")
	fs.StringVar(&o.out, "o", "", "write to `FILE` instead of standard output")
	fs.StringVar(&o.column, "column", "", "the email column of a CSV input: a header `NAME` or a 1-based INDEX (with an INDEX, the first row is a header unless that field holds an @)")
	fs.BoolVar(&o.privateMX, "allow-private-mx", false, "accept MX hosts whose addresses are all private or loopback (intranets, tests); by default such a domain is NO_MX_RECORDS")
	fs.BoolVar(&o.smtpProbe, "smtp-probe", false, "ask each LIKELY address's mail server over SMTP whether the mailbox exists (needs -smtp-helo and -smtp-from, and outbound port 25)")
	fs.StringVar(&o.smtp.HELO, "smtp-helo", "", "host `name` said in EHLO when probing: a name you own")
	fs.StringVar(&o.smtp.MailFrom, "smtp-from", "", "sender `address` of MAIL FROM when probing: an address you own")
	fs.IntVar(&o.smtp.Port, "smtp-port", smtpprobe.DefaultPort, "SMTP `port` of the MX hosts")
	fs.DurationVar(&o.smtp.Timeout, "smtp-timeout", smtpprobe.DefaultTimeout, "longest wait for one probe")
	fs.StringVar(&o.api, "api", "", "base `URL` of a validmail deployment to clean the list through (batches of 1,000, charged to -key's\naccount) instead of validating in this process")
	fs.StringVar(&o.key, "key", "", "API `key` for -api (default: the VALIDMAIL_API_KEY environment variable)")
	fs.BoolVar(&o.quiet, "quiet", false, "no progress and no summary (row problems are still reported)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.progressEvery = 2 * time.Second
	switch fs.NArg() {
	case 0:
	case 1:
		o.file = fs.Arg(0)
	default:
		return o, fmt.Errorf("one input file at most, got %d", fs.NArg())
	}
	if *dns != "" {
		for _, s := range strings.Split(*dns, ",") {
			if s = strings.TrimSpace(s); s != "" {
				o.dns = append(o.dns, s)
			}
		}
	}
	if o.concurrency < 1 {
		return o, fmt.Errorf("-concurrency must be at least 1")
	}
	if o.timeout <= 0 {
		return o, fmt.Errorf("-timeout must be positive")
	}
	if o.smtpProbe {
		if _, err := smtpprobe.New(o.smtp); err != nil {
			return o, fmt.Errorf("-smtp-probe needs -smtp-helo and -smtp-from naming a host and an address you own: %v", err)
		}
	}
	if o.format != "csv" && o.format != "jsonl" {
		return o, fmt.Errorf("-format %q: want csv or jsonl", o.format)
	}
	if *only != "" {
		o.only = make(map[emailcheck.Status]bool)
		for _, s := range strings.Split(*only, ",") {
			st := emailcheck.Status(strings.ToUpper(strings.TrimSpace(s)))
			if !slices.Contains(statusOrder, st) {
				return o, fmt.Errorf("-only: unknown status %q (known: %v)", s, statusOrder)
			}
			o.only[st] = true
		}
	}
	return o, nil
}

// run is the whole command: it parses args, validates the list and
// returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "bulk: %v (see -help)\n", err)
		return exitError
	}
	if opts.api != "" {
		key := cmp.Or(opts.key, os.Getenv("VALIDMAIL_API_KEY"))
		c, err := client.New(opts.api, key, nil)
		if err != nil {
			fmt.Fprintf(stderr, "bulk: -api: %v\n", err)
			return exitError
		}
		return execute(ctx, opts, func(ctx context.Context, emails iter.Seq[string]) iter.Seq2[emailcheck.Result, error] {
			return c.ValidateList(ctx, emails)
		}, stdin, stdout, stderr)
	}
	ecfg := &emailcheck.Config{Nameservers: opts.dns, QueryTimeout: opts.timeout, AllowPrivateMX: opts.privateMX}
	if opts.smtpProbe {
		sc := opts.smtp
		sc.AllowPrivate = opts.privateMX
		p, err := smtpprobe.New(sc)
		if err != nil {
			fmt.Fprintf(stderr, "bulk: %v\n", err)
			return exitError
		}
		ecfg.Prober = p
	}
	v, err := emailcheck.New(ecfg)
	if err != nil {
		fmt.Fprintf(stderr, "bulk: %v\n", err)
		return exitError
	}
	defer v.Close()
	return execute(ctx, opts, local(v, opts), stdin, stdout, stderr)
}

// validateFunc validates a sequence of addresses and yields the results in
// input order: the validator in-process, or a remote deployment.
type validateFunc func(ctx context.Context, emails iter.Seq[string]) iter.Seq2[emailcheck.Result, error]

// item carries a row, or the read error that ends the input.
type item struct {
	row row
	err error
}

// execute validates the input described by opts with validate.
func execute(ctx context.Context, opts options, validate validateFunc, stdin io.Reader, stdout, stderr io.Writer) int {
	start := time.Now()
	fail := func(err error) int {
		fmt.Fprintf(stderr, "bulk: %v\n", err)
		return exitError
	}

	src, size, closeSrc, err := openSource(opts.file, stdin)
	if err != nil {
		return fail(err)
	}
	defer closeSrc()
	if opts.out != "" && opts.file != "" && opts.file != "-" && sameFile(opts.file, opts.out) {
		return fail(fmt.Errorf("-o %s would overwrite the input", opts.out))
	}
	in, err := awaitInput(ctx, src, opts.column)
	if in == nil && err == nil {
		fmt.Fprintln(stderr, "bulk: interrupted")
		return exitInterrupted
	}
	if err != nil {
		return fail(err)
	}
	if in.dec.Encoding() == charset.UTF16 {
		// Progress counts the text read, two bytes a character less.
		size /= 2
	}

	out := stdout
	if opts.out != "" {
		f, err := os.Create(opts.out)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		out = f
	}
	rw, err := newRowWriter(out, opts.format, in.format)
	if err != nil {
		return fail(err)
	}
	if err := rw.header(); err != nil {
		return fail(err)
	}

	st := newStats(start, size)
	rep := newReporter(stderr, opts.quiet, st, opts.progressEvery)
	rep.start()
	defer rep.finish()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan item, 256)
	go readRows(ctx, in, items)

	var fifo rowQueue
	emails := rowEmails(ctx, items, &fifo, st, opts.dedupe)
	writeErr := writeResults(ctx, validate(ctx, emails), &fifo, rw, rep, st, opts.only)
	interrupted := ctx.Err() != nil
	readErr := fifo.err()
	cancel()
	if err := rw.flush(); err != nil && writeErr == nil {
		writeErr = err
	}
	rep.finish()
	if !opts.quiet {
		writeSummary(stderr, st.snapshot(time.Now()), interrupted)
	}
	switch {
	case interrupted:
		fmt.Fprintln(stderr, "bulk: interrupted")
		return exitInterrupted
	case readErr != nil:
		return fail(fmt.Errorf("reading input: %w", readErr))
	case writeErr != nil:
		return fail(fmt.Errorf("writing output: %w", writeErr))
	}
	return exitOK
}

// awaitInput opens the input on src. Reading the first line may block on
// a terminal or a pipe: it is read where an interrupt can still end the
// run, which returns neither an input nor an error.
func awaitInput(ctx context.Context, src io.Reader, column string) (*input, error) {
	type opened struct {
		in  *input
		err error
	}
	openCh := make(chan opened, 1)
	go func() {
		in, err := openInput(src, column)
		openCh <- opened{in, err}
	}()
	select {
	case o := <-openCh:
		return o.in, o.err
	case <-ctx.Done():
		return nil, nil
	}
}

// rowEmails yields the address of each row from items, in order, queueing
// the row in fifo for its result: a malformed row as the empty address
// (validated as INVALID_FORMAT), a repeated one left out and counted when
// dedupe is set. A read error ends it, kept in fifo.
func rowEmails(ctx context.Context, items <-chan item, fifo *rowQueue, st *stats, dedupe bool) iter.Seq[string] {
	var (
		seen map[uint64]struct{}
		seed = maphash.MakeSeed()
	)
	if dedupe {
		seen = make(map[uint64]struct{})
	}
	return func(yield func(string) bool) {
		for {
			var it item
			var ok bool
			select {
			case it, ok = <-items:
			case <-ctx.Done():
				return
			}
			if !ok {
				return
			}
			if it.err != nil {
				fifo.setErr(it.err)
				return
			}
			r := it.row
			email := r.email
			if r.err != nil {
				email = "" // validated as INVALID_FORMAT, kept in order
			} else if seen != nil && email != "" {
				h := maphash.String(seed, strings.ToLower(email))
				if _, dup := seen[h]; dup {
					st.addDuplicate(r)
					continue
				}
				seen[h] = struct{}{}
			}
			fifo.push(r)
			if !yield(email) {
				return
			}
		}
	}
}

// writeResults writes each result beside the row fifo holds for it (those
// whose status only keeps), counts it, and flushes the output at least
// every half second. It returns the error that ended the validation or
// the writing; a validation error after ctx's end is the interrupt's.
func writeResults(ctx context.Context, results iter.Seq2[emailcheck.Result, error], fifo *rowQueue, rw rowWriter, rep *reporter, st *stats, only map[emailcheck.Status]bool) error {
	lastFlush := time.Now()
	for res, err := range results {
		if err != nil {
			if ctx.Err() == nil {
				return err
			}
			return nil
		}
		r := fifo.pop()
		if r.err != nil {
			res.Email = r.email
			rep.warn("line %s: %v", lineRange(r), r.err)
		}
		keep := only == nil || only[res.Confidence.Status]
		st.add(r, res, keep)
		if keep {
			if err := rw.write(r, res); err != nil {
				return err
			}
		}
		if now := time.Now(); now.Sub(lastFlush) > 500*time.Millisecond {
			lastFlush = now
			if err := rw.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// readRows sends the rows of in until its end, a read error or ctx's end.
func readRows(ctx context.Context, in *input, items chan<- item) {
	defer close(items)
	for {
		r, err := in.next()
		if errors.Is(err, io.EOF) {
			return
		}
		it := item{row: r, err: err}
		select {
		case items <- it:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// openSource opens FILE, or returns stdin for "" and "-". size is the
// input's size when it is a regular file (stdin redirected from a file
// included), else 0.
func openSource(file string, stdin io.Reader) (src io.Reader, size int64, closeFn func(), err error) {
	closeFn = func() {}
	src = stdin
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, 0, nil, err
		}
		src, closeFn = f, func() { f.Close() }
	}
	if f, ok := src.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			size = fi.Size()
		}
	}
	return src, size, closeFn, nil
}

// sameFile reports whether paths a and b name the same existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// lineRange is "12" or "12-14" for a row over several lines.
func lineRange(r row) string {
	if r.lines > 1 {
		return fmt.Sprintf("%d-%d", r.line, r.line+r.lines-1)
	}
	return fmt.Sprint(r.line)
}

// rowQueue holds the rows handed to the validator whose results have not
// been written yet, in input order. It also records the read error that
// ended the input.
type rowQueue struct {
	mu      sync.Mutex
	rows    []row
	head    int
	readErr error
}

func (q *rowQueue) push(r row) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head > 1024 && q.head*2 > len(q.rows) {
		q.rows = append(q.rows[:0], q.rows[q.head:]...)
		q.head = 0
	}
	q.rows = append(q.rows, r)
}

func (q *rowQueue) pop() row {
	q.mu.Lock()
	defer q.mu.Unlock()
	r := q.rows[q.head]
	q.rows[q.head] = row{}
	q.head++
	return r
}

func (q *rowQueue) setErr(err error) {
	q.mu.Lock()
	q.readErr = err
	q.mu.Unlock()
}

func (q *rowQueue) err() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.readErr
}

// local returns the validateFunc of the validator in-process.
func local(v *emailcheck.Validator, opts options) validateFunc {
	many := &emailcheck.ManyOptions{Concurrency: opts.concurrency, Source: emailcheck.SourceAPI}
	return func(ctx context.Context, emails iter.Seq[string]) iter.Seq2[emailcheck.Result, error] {
		return v.ValidateMany(ctx, emails, many)
	}
}
