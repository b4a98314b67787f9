package emailcheck

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ErrFeedRefused is matched (with errors.Is) by the error of a
// [DisposableFeed.Reload] whose list failed its checks: too large, too
// small, shrunk by more than half, or a line that is not a domain. The
// list in use is kept.
var ErrFeedRefused = errors.New("emailcheck: disposable list refused")

// Defaults of [FeedConfig].
const (
	DefaultFeedInterval = 5 * time.Minute
	DefaultFeedMaxBytes = 16 << 20
	DefaultFeedTimeout  = time.Minute
)

// FeedConfig configures a [DisposableFeed]. The zero value (or a nil
// *FeedConfig) gives the documented defaults.
type FeedConfig struct {
	// Interval is how often [DisposableFeed.Run] checks the source for a
	// change. Default [DefaultFeedInterval].
	Interval time.Duration
	// MaxBytes bounds the list's size: a larger one is refused. Default
	// [DefaultFeedMaxBytes] (16 MiB, about 700,000 domains).
	MaxBytes int64
	// MinDomains is the fewest domains a list may hold. Default 1: an
	// empty list is refused.
	MinDomains int
	// Timeout bounds one fetch of a URL. Default [DefaultFeedTimeout].
	Timeout time.Duration
	// Client fetches a URL. Default: a client of its own with Timeout.
	Client *http.Client
	// Logger receives a warning for each refused or failed reload and an
	// info line for each list taken. Default: discard.
	Logger *slog.Logger
}

// FeedStats is a snapshot of a [DisposableFeed], for an operator's
// metrics.
type FeedStats struct {
	// Domains is how many domains the list in use holds (0 before the
	// first list is taken).
	Domains int
	// LoadedAt is when the list in use was taken (zero before the first);
	// its age is the time since. ModifiedAt is the source's own time of
	// its last change: the file's modification time, or the URL's
	// Last-Modified (zero when it sends none).
	LoadedAt, ModifiedAt time.Time
	// CheckedAt is when the source was last checked, whatever came of it.
	CheckedAt time.Time
	// Loads counts lists taken; Unchanged counts checks that found the
	// source as it was; Refused counts lists that failed their checks;
	// Failures counts checks that could not read the source.
	Loads, Unchanged, Refused, Failures uint64
	// LastError is the error of the last check, "" when it succeeded.
	LastError string
}

// DisposableFeed is an operator's list of disposable domains, read from a
// file or an http(s) URL and merged with the embedded lists by every
// [Validator] whose Config.DisposableFeed it is: a domain on it, or below
// one of its domains, or whose MX host's registrable domain is on it, is
// DISPOSABLE ([ReasonDisposableList], [ReasonDisposableMXHost]), unless
// allowlisted (the embedded allowlist, the known-domain model,
// Config.AllowDomains), which always wins. As the embedded lists were
// built, its free providers are left out, and its lines never condemn a
// domain by an MX host of a mail service many domains share (the provider
// table's, shared and parking hosts).
//
// The list has one domain a line, in any case, Unicode or A-label; blank
// lines and lines starting with "#" are ignored. A new list replaces the
// one in use only whole, and only when it passes its checks: at most
// MaxBytes, at least MinDomains domains, at least half as many as the
// list in use (a truncated download is not a smaller list), and every
// other line a domain; a line that is a public suffix, which no address
// would match, is skipped (the upstream lists carry a few). Otherwise it is
// refused ([ErrFeedRefused]) and the list in use is kept; the same bytes
// again count as unchanged. Verdicts cached before a new list is taken are
// judged again against it at their next use, without a DNS query.
//
// NewDisposableFeed reads nothing; [DisposableFeed.Reload] checks the
// source once, [DisposableFeed.Run] every Interval; a file source must be
// a regular file. [DisposableFeed.Stats] never waits on a reload. A
// DisposableFeed is safe for concurrent use.
type DisposableFeed struct {
	source  string
	isURL   bool
	cfg     FeedConfig
	current atomic.Pointer[feedList]
	gen     atomic.Uint64 // bumped whenever a list is taken

	mu    sync.Mutex // one reload at a time; guards stats, etag and stamp
	stats FeedStats  // the reload's own, published when it ends
	etag  string     // the URL's ETag of the list in use
	stamp string     // the file's size and time, or the URL's Last-Modified, of the list in use
	sum   [32]byte   // the SHA-256 of the list in use

	statsMu   sync.Mutex // guards published, so that Stats never waits on a reload's I/O
	published FeedStats
}

// feedList is one list taken.
type feedList struct {
	domains map[string]struct{}
}

// NewDisposableFeed returns a feed of the list at source: an http:// or
// https:// URL, or a file's path. It reads nothing yet.
func NewDisposableFeed(source string, cfg *FeedConfig) (*DisposableFeed, error) {
	f := &DisposableFeed{source: source}
	if cfg != nil {
		f.cfg = *cfg
	}
	switch {
	case source == "":
		return nil, fmt.Errorf("%w: disposable feed: no source", ErrConfig)
	case strings.HasPrefix(source, "http://") || strings.HasPrefix(source, "https://"):
		f.isURL = true
	}
	c := &f.cfg
	if c.Interval < 0 || c.MaxBytes < 0 || c.MinDomains < 0 || c.Timeout < 0 {
		return nil, fmt.Errorf("%w: disposable feed: negative setting", ErrConfig)
	}
	if c.Interval == 0 {
		c.Interval = DefaultFeedInterval
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultFeedMaxBytes
	}
	if c.MinDomains == 0 {
		c.MinDomains = 1
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultFeedTimeout
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// Source returns the file or URL the feed reads.
func (f *DisposableFeed) Source() string { return f.source }

// Stats returns a snapshot of the feed's state.
func (f *DisposableFeed) Stats() FeedStats {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	return f.published
}

// publish makes the reload's stats those Stats returns; f.mu is held.
func (f *DisposableFeed) publish() {
	f.statsMu.Lock()
	defer f.statsMu.Unlock()
	f.published = f.stats
}

// Run checks the source at once and then every Interval until ctx ends,
// and returns ctx's error. A failed or refused check is logged and keeps
// the list in use.
func (f *DisposableFeed) Run(ctx context.Context) error {
	t := time.NewTicker(f.cfg.Interval)
	defer t.Stop()
	for {
		if err := f.Reload(ctx); err != nil && ctx.Err() == nil {
			f.cfg.Logger.Warn("disposable list not reloaded", "source", f.source, "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Reload checks the source once and takes its list if it changed and
// passes its checks. It returns nil when the list was taken or the source
// is unchanged, an error matching [ErrFeedRefused] when the list failed
// its checks, and another error when the source could not be read; in
// both cases the list in use is kept.
func (f *DisposableFeed) Reload(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.publish()
	now := time.Now()
	f.stats.CheckedAt = now
	body, etag, stamp, modified, err := f.fetch(ctx)
	switch {
	case errors.Is(err, ErrFeedRefused):
		f.stats.Refused++
	case err != nil:
		f.stats.Failures++
	case body == nil || sha256.Sum256(body) == f.sum && f.current.Load() != nil:
		// Unchanged, or the same bytes again (a server without
		// validators): the cached verdicts stand.
		f.etag, f.stamp = cmp.Or(etag, f.etag), cmp.Or(stamp, f.stamp)
		f.stats.Unchanged++
	default:
		var list *feedList
		if list, err = f.verify(body); err != nil {
			f.stats.Refused++
			break
		}
		f.current.Store(list)
		f.gen.Add(1)
		f.etag, f.stamp, f.sum = etag, stamp, sha256.Sum256(body)
		f.stats.Loads++
		f.stats.Domains = len(list.domains)
		f.stats.LoadedAt, f.stats.ModifiedAt = now, modified
		f.cfg.Logger.Info("disposable list loaded", "source", f.source, "domains", len(list.domains))
	}
	f.stats.LastError = ""
	if err != nil {
		f.stats.LastError = err.Error()
	}
	return err
}

// fetch reads the source, returning a nil body when it has not changed
// since the list in use was read, with what identifies this version.
func (f *DisposableFeed) fetch(ctx context.Context) (body []byte, etag, stamp string, modified time.Time, err error) {
	if !f.isURL {
		fi, err := os.Stat(f.source)
		if err != nil {
			return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %w", err)
		}
		if !fi.Mode().IsRegular() {
			// A FIFO or device would block the read beyond any context.
			return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %s is not a regular file", f.source)
		}
		stamp = fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano())
		if stamp == f.stamp {
			return nil, "", stamp, fi.ModTime(), nil
		}
		if fi.Size() > f.cfg.MaxBytes {
			return nil, "", "", time.Time{}, fmt.Errorf("%w: %d bytes, more than %d", ErrFeedRefused, fi.Size(), f.cfg.MaxBytes)
		}
		file, err := os.Open(f.source)
		if err != nil {
			return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %w", err)
		}
		defer file.Close()
		body, err = f.readLimited(file)
		return body, "", stamp, fi.ModTime(), err
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.source, nil)
	if err != nil {
		return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %w", err)
	}
	if f.etag != "" {
		req.Header.Set("If-None-Match", f.etag)
	}
	if f.stamp != "" {
		req.Header.Set("If-Modified-Since", f.stamp)
	}
	resp, err := f.cfg.Client.Do(req)
	if err != nil {
		return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil, f.etag, f.stamp, f.stats.ModifiedAt, nil
	case http.StatusOK:
	default:
		return nil, "", "", time.Time{}, fmt.Errorf("emailcheck: disposable list: %s answered %s", f.source, resp.Status)
	}
	stamp = resp.Header.Get("Last-Modified")
	modified, _ = http.ParseTime(stamp)
	body, err = f.readLimited(resp.Body)
	return body, resp.Header.Get("ETag"), stamp, modified, err
}

// readLimited reads r whole, refusing more than MaxBytes.
func (f *DisposableFeed) readLimited(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, f.cfg.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("emailcheck: disposable list: %w", err)
	}
	if int64(len(body)) > f.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrFeedRefused, f.cfg.MaxBytes)
	}
	return body, nil
}

// verify parses a list and checks it against the feed's bounds and the
// list in use.
func (f *DisposableFeed) verify(body []byte) (*feedList, error) {
	list := &feedList{domains: make(map[string]struct{}, bytes.Count(body, []byte{'\n'})+1)}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		d, err := normalizeListDomain(line)
		if errors.Is(err, errPublicSuffix) {
			// No address is matched by a public suffix; the upstream
			// lists carry a few (dynamic DNS zones): skipped, not refused.
			continue
		}
		if err == nil && (d != line || strings.Contains(d, "xn--")) {
			// A name mapped on its way to an A-label must be one that
			// maps to itself: a label IDNA would not give back matches
			// no address.
			if again, aerr := normalizeListDomain(d); aerr != nil || again != d {
				err = errors.New("not a domain name once converted to A-labels")
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %q: %w", ErrFeedRefused, n, truncate(line, 64), err)
		}
		list.domains[d] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %w", ErrFeedRefused, n+1, err)
	}
	if len(list.domains) < f.cfg.MinDomains {
		return nil, fmt.Errorf("%w: %d domains, fewer than %d", ErrFeedRefused, len(list.domains), f.cfg.MinDomains)
	}
	if cur := f.current.Load(); cur != nil && 2*len(list.domains) < len(cur.domains) {
		return nil, fmt.Errorf("%w: %d domains, less than half of the %d in use", ErrFeedRefused, len(list.domains), len(cur.domains))
	}
	return list, nil
}

// truncate returns s cut to at most n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// generation identifies the list in use: it changes whenever a list is
// taken. A nil feed's is 0.
func (f *DisposableFeed) generation() uint64 {
	if f == nil {
		return 0
	}
	return f.gen.Load()
}

// lists reports whether domain, or a parent of it down to reg (its
// registrable domain), is on the list in use. A nil feed lists nothing.
func (f *DisposableFeed) lists(domain, reg string) bool {
	if f == nil {
		return false
	}
	cur := f.current.Load()
	return cur != nil && matchUp(cur.domains, domain, reg)
}

// listsReg reports whether a registrable domain is on the list in use.
func (f *DisposableFeed) listsReg(reg string) bool {
	if f == nil {
		return false
	}
	cur := f.current.Load()
	if cur == nil {
		return false
	}
	_, ok := cur.domains[reg]
	return ok
}
