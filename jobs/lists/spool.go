package lists

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

// Defaults of [Options].
const (
	// DefaultMaxRows is the most data rows of a list.
	DefaultMaxRows = 1_000_000
	// DefaultMaxBytes bounds a list's file: 1,000,000 rows of 256 bytes.
	DefaultMaxBytes = 256 << 20
	// DefaultMaxLineBytes bounds one row.
	DefaultMaxLineBytes = 64 << 10
	// DefaultMaxColumns bounds the fields of one row.
	DefaultMaxColumns = 512
	// ChunkRows is how many rows [Submit] hands the driver at a time.
	ChunkRows = 1000
)

// Options bound and direct the reading of a list. The zero value reads a
// CSV file within the defaults, finding the address column itself.
type Options struct {
	// Text reads one address a line (text/plain): no delimiters, no
	// quotes.
	Text bool
	// Column names the address column: a header's name (any case), or a
	// number from 1. Empty: the column whose header is a known name
	// ("email", "e-mail", "email address", "mail", …), else the first
	// whose cell holds an address.
	Column string
	// MaxRows, MaxBytes, MaxLineBytes and MaxColumns bound the file;
	// zero means DefaultMaxRows and so on.
	MaxRows      int
	MaxBytes     int64
	MaxLineBytes int
	MaxColumns   int
	// Syntax is what makes a cell an address: a row whose cell
	// [emailcheck.ParseAddress] refuses is not charged nor validated.
	Syntax emailcheck.SyntaxOptions
	// TempDir holds the spool file; empty means [os.TempDir].
	TempDir string
	// Sheet names the sheet of an .xlsx workbook ([ReadXLSX]) to read: a
	// name (any case) or a number from 1; empty means the first.
	Sheet string
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxRows <= 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxLineBytes <= 0 {
		c.MaxLineBytes = DefaultMaxLineBytes
	}
	if c.MaxColumns <= 0 {
		c.MaxColumns = DefaultMaxColumns
	}
	return c
}

// headerNames are header cells naming an address column, normalized
// (lower case, without spaces, dashes and underscores).
var headerNames = []string{"email", "emailaddress", "mail", "emails", "mailaddress", "address", "courriel", "correo", "correoelectronico", "emailadresse"}

func normalizeHeader(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer(" ", "", "-", "", "_", "", ".", "").Replace(s)
}

// Spool is a list read whole into a temporary file: its rows are known
// valid, counted and can be read again any number of times. The file is
// unlinked as soon as it is created, so that nothing is left in the
// temporary directory after a shutdown or a crash; Close frees it.
type Spool struct {
	f *os.File
	// name is the file's name while it is still in its directory: only
	// where an open file could not be removed.
	name string
	// Header names the columns: the uploaded header, or "email" (one
	// column) and "column_N" names for a file without one.
	Header []string
	// HasHeader tells whether the file's first row was a header.
	HasHeader bool
	// Column is the address column's index.
	Column int
	// Rows counts the data rows; Addresses those whose cell is an
	// address (duplicates included); InvalidRows the others.
	Rows, Addresses, InvalidRows int
	// Size is the spool file's size in bytes.
	Size int64
	// Encoding names the encoding the file was read in (a [charset]
	// name: "UTF-8", "UTF-16", "Windows-1252", "UTF-8 and Windows-1252").
	Encoding string
}

// Read reads a list from r into a spool, checking it whole within the
// options' bounds: a file it refuses leaves nothing behind. The caller
// closes the spool.
func Read(ctx context.Context, r io.Reader, o *Options) (*Spool, error) {
	opts := o.withDefaults()
	rr, err := newRecordReader(r, opts.Text, opts)
	if err != nil {
		return nil, err
	}
	return readRecords(ctx, rr, opts)
}

// records is where [readRecords] takes a list's rows from: a text file's
// reader, or a workbook's sheet.
type records interface {
	// next returns the next record, io.EOF after the last.
	next() ([]string, error)
	// lineNo numbers the last record read (its line or row, from 1).
	lineNo() int
	// encoding names what the rows were read from.
	encoding() string
}

// readRecords spools the records of rr: it finds the address column in
// the first rows, writes every row to a new spool file, then names the
// columns.
func readRecords(ctx context.Context, rr records, opts Options) (*Spool, error) {
	first, err := rr.next()
	if errors.Is(err, io.EOF) {
		return nil, &ParseError{Err: ErrNoRows}
	}
	if err != nil {
		return nil, err
	}
	first = slices.Clone(first)
	sp := &Spool{}
	second, err := sp.findColumn(rr, first, opts)
	if err != nil {
		return nil, err
	}
	w, err := newSpoolWriter(sp, rr, opts)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			sp.Close()
		}
	}()
	if err := w.writeRows(ctx, first, second); err != nil {
		return nil, err
	}
	if sp.Rows == 0 {
		return nil, &ParseError{Err: ErrNoRows}
	}
	if err := w.bw.Flush(); err != nil {
		return nil, fmt.Errorf("lists: spool: %w", err)
	}
	sp.nameColumns(w.width)
	sp.Size, _ = sp.f.Seek(0, io.SeekCurrent)
	sp.Encoding = rr.encoding()
	ok = true
	return sp, nil
}

// findColumn sets the spool's address column and whether first is a
// header: the column opts names, else one found in first or, after a
// header of unknown names, in the next record, which it then returns
// (nil when it read none).
func (sp *Spool) findColumn(rr records, first []string, opts Options) (second []string, err error) {
	if opts.Column != "" {
		sp.Column, sp.HasHeader, err = namedColumn(first, opts)
		return nil, err
	}
	firstLine := rr.lineNo()
	sp.Column, sp.HasHeader = detectColumn(first, opts)
	if sp.Column < 0 && !opts.Text {
		// A header of unknown names: the second row tells the column.
		second, err = rr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		second = slices.Clone(second)
		if c, _ := detectColumn(second, opts); c >= 0 && len(second) > 0 {
			sp.Column, sp.HasHeader = c, true
		}
	}
	if sp.Column < 0 {
		return nil, &ParseError{Line: firstLine, Err: ErrNoColumn}
	}
	return second, nil
}

// spoolWriter writes a list's rows to its spool file, counting them.
type spoolWriter struct {
	sp    *Spool
	rr    records
	opts  Options
	bw    *bufio.Writer
	buf   []byte
	width int // the most fields of a record so far
}

// newSpoolWriter creates the spool's file, unlinked at once.
func newSpoolWriter(sp *Spool, rr records, opts Options) (*spoolWriter, error) {
	f, err := os.CreateTemp(opts.TempDir, "validmail-list-*")
	if err != nil {
		return nil, fmt.Errorf("lists: spool: %w", err)
	}
	sp.f = f
	// The spool reads its rows through f alone: the file leaves the
	// directory now, and its space is freed when f is closed, or when
	// the process ends, however it ends. Where an open file cannot be
	// removed, Close removes it.
	if os.Remove(f.Name()) != nil {
		sp.name = f.Name()
	}
	return &spoolWriter{sp: sp, rr: rr, opts: opts, bw: bufio.NewWriterSize(f, 64<<10)}, nil
}

// writeRows writes first (unless it is the header), second (when the
// column search read it) and every record left in the reader.
func (w *spoolWriter) writeRows(ctx context.Context, first, second []string) error {
	if w.sp.HasHeader {
		w.sp.Header = first
	} else if err := w.add(first); err != nil {
		return err
	}
	w.width = len(first)
	if second != nil {
		if err := w.add(second); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rec, err := w.rr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := w.add(rec); err != nil {
			return err
		}
	}
}

// add writes one data row, refusing one past opts.MaxRows.
func (w *spoolWriter) add(rec []string) error {
	sp := w.sp
	if sp.Rows == w.opts.MaxRows {
		return &ParseError{Line: w.rr.lineNo(), Err: fmt.Errorf("%w: more than %d", ErrTooManyRows, w.opts.MaxRows)}
	}
	w.width = max(w.width, len(rec))
	sp.Rows++
	valid := isAddress(cellAt(rec, sp.Column), w.opts.Syntax)
	if valid {
		sp.Addresses++
	} else {
		sp.InvalidRows++
	}
	w.buf = encodeRow(w.buf[:0], valid, rec)
	_, err := w.bw.Write(w.buf)
	return err
}

// nameColumns completes the header: "email" (one column) or "column_N"
// names for a file without one, and "column_N" for rows longer than the
// header or an address column past it, so that every row's fields have a
// name and the results' columns stay aligned.
func (sp *Spool) nameColumns(width int) {
	n := max(width, sp.Column+1)
	if sp.Header == nil {
		sp.Header = make([]string, n)
		for i := range sp.Header {
			sp.Header[i] = "column_" + strconv.Itoa(i+1)
		}
		if len(sp.Header) == 1 {
			sp.Header[0] = "email"
		}
	}
	for i := len(sp.Header); i < n; i++ {
		sp.Header = append(sp.Header, "column_"+strconv.Itoa(i+1))
	}
}

// namedColumn finds the column opts.Column names in the first record.
func namedColumn(first []string, opts Options) (col int, header bool, err error) {
	want := normalizeHeader(opts.Column)
	for i, h := range first {
		if normalizeHeader(h) == want {
			return i, true, nil
		}
	}
	n, err := strconv.Atoi(strings.TrimSpace(opts.Column))
	if err != nil || n < 1 || n > len(first) && n > opts.MaxColumns {
		return 0, false, &ParseError{Line: 1, Err: fmt.Errorf("%w: no column %q", ErrNoColumn, opts.Column)}
	}
	return n - 1, !strings.Contains(cellAt(first, n-1), "@"), nil
}

// detectColumn finds the address column in a record: a header's known
// name, else the first cell holding an address. -1 when none.
func detectColumn(rec []string, opts Options) (col int, header bool) {
	for i, h := range rec {
		if slices.Contains(headerNames, normalizeHeader(h)) {
			return i, true
		}
	}
	for i, c := range rec {
		if isAddress(c, opts.Syntax) {
			return i, false
		}
	}
	if opts.Text && len(rec) == 1 {
		return 0, !strings.Contains(rec[0], "@")
	}
	return -1, false
}

func cellAt(rec []string, i int) string {
	if i < len(rec) {
		return rec[i]
	}
	return ""
}

// Key returns the key of an address cell: trimmed and case-folded as a
// whole; rows of equal keys are one address.
func Key(cell string) string { return strings.ToLower(strings.TrimSpace(cell)) }

func isAddress(cell string, syntax emailcheck.SyntaxOptions) bool {
	s := strings.TrimSpace(cell)
	if s == "" || !strings.Contains(s, "@") {
		return false
	}
	_, err := emailcheck.ParseAddress(s, syntax)
	return err == nil
}

// encodeRow appends a row of the spool: a byte (1 for an address), the
// count of fields, then each field's length and bytes, as uvarints.
func encodeRow(buf []byte, valid bool, rec []string) []byte {
	b := byte(0)
	if valid {
		b = 1
	}
	buf = append(buf, b)
	buf = binary.AppendUvarint(buf, uint64(len(rec)))
	for _, f := range rec {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	return buf
}

// Close removes the spool's file.
func (sp *Spool) Close() error {
	if sp.f == nil {
		return nil
	}
	err := sp.f.Close()
	sp.f = nil
	if sp.name != "" {
		err = errors.Join(err, os.Remove(sp.name))
		sp.name = ""
	}
	return err
}

// Each calls fn with every row, in order; the row's Record is fresh for
// each call. It stops at fn's first error, returning it.
func (sp *Spool) Each(ctx context.Context, fn func(jobs.ListRow) error) error {
	if sp.f == nil {
		return errors.New("lists: spool closed")
	}
	br := bufio.NewReaderSize(io.NewSectionReader(sp.f, 0, sp.Size), 64<<10)
	for n := 0; n < sp.Rows; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		row, err := decodeRow(br)
		if err != nil {
			return fmt.Errorf("lists: spool row %d: %w", n, err)
		}
		row.N = n
		if row.Key != "" {
			cell := cellAt(row.Record, sp.Column)
			row.Email, row.Key = strings.TrimSpace(cell), Key(cell)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return nil
}

func decodeRow(br *bufio.Reader) (jobs.ListRow, error) {
	var row jobs.ListRow
	valid, err := br.ReadByte()
	if err != nil {
		return row, err
	}
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return row, err
	}
	row.Record = make([]string, n)
	for i := range row.Record {
		l, err := binary.ReadUvarint(br)
		if err != nil {
			return row, err
		}
		b := make([]byte, l)
		if _, err := io.ReadFull(br, b); err != nil {
			return row, err
		}
		row.Record[i] = string(b)
	}
	if valid == 1 {
		row.Key = "x" // Each sets the real key
	}
	return row, nil
}

// Preview is what a customer sees before confirming a list.
type Preview struct {
	// Header, HasHeader and Column are the spool's.
	Header    []string
	HasHeader bool
	Column    int
	// First holds up to the asked number of first rows.
	First [][]string
	// Rows, InvalidRows as in [Spool]; Unique counts the distinct
	// addresses, Duplicates the other address rows.
	Rows, InvalidRows, Unique, Duplicates int
	// Cost is the credits the list will cost: one per unique address.
	Cost int64
}

// Preview reads the spool once more to count its unique addresses and
// returns the first n rows. It counts addresses by a 64-bit hash of their
// key: an estimate for the customer to confirm, as [Submit]'s driver
// counts exactly what it charges.
func (sp *Spool) Preview(ctx context.Context, n int) (Preview, error) {
	p := Preview{Header: slices.Clone(sp.Header), HasHeader: sp.HasHeader, Column: sp.Column, Rows: sp.Rows, InvalidRows: sp.InvalidRows}
	seed := maphash.MakeSeed()
	seen := make(map[uint64]struct{}, min(sp.Addresses, 1<<16))
	err := sp.Each(ctx, func(r jobs.ListRow) error {
		if len(p.First) < n {
			p.First = append(p.First, r.Record)
		}
		if r.Key != "" {
			seen[maphash.String(seed, r.Key)] = struct{}{}
		}
		return nil
	})
	if err != nil {
		return Preview{}, err
	}
	p.Unique = len(seen)
	p.Duplicates = sp.Addresses - p.Unique
	p.Cost = int64(p.Unique)
	return p, nil
}

// SubmitParams describes a list's batch for [Submit].
type SubmitParams struct {
	// AccountID owns the list; required.
	AccountID string
	// Name names the list's batch; optional.
	Name string
	// Source is the batch's source; empty means [jobs.SourceAPI].
	Source string
	// Uncharged, when true, charges nothing; else one credit per unique
	// address beyond the first FreeAddresses (what is left of a console's
	// free allowance, used first).
	Uncharged     bool
	FreeAddresses int
	// IdempotencyKey and Fingerprint make the list apply once per account
	// ([jobs.BeginListParams.IdempotencyKey]).
	IdempotencyKey, Fingerprint string
}

// Submit stages the spool's rows on q's driver a chunk at a time, then
// commits the list: its charge and its batch become visible together, or
// nothing does. An error before the commit aborts what was staged.
func Submit(ctx context.Context, q *jobs.Queue, sp *Spool, p SubmitParams) (jobs.ListInfo, error) {
	if sp.Addresses == 0 {
		return jobs.ListInfo{}, jobs.ErrEmptyBatch
	}
	w, err := q.BeginList(ctx, jobs.BeginListParams{
		AccountID: p.AccountID, Name: p.Name, Header: sp.Header, Column: sp.Column,
		Rows: sp.Rows, Charge: !p.Uncharged, Free: max(p.FreeAddresses, 0), Source: cmp.Or(p.Source, jobs.SourceAPI),
		IdempotencyKey: p.IdempotencyKey, Fingerprint: p.Fingerprint,
	})
	if err != nil {
		return jobs.ListInfo{}, err
	}
	committed := false
	defer func() {
		if !committed {
			w.Abort(context.WithoutCancel(ctx))
		}
	}()
	chunk := make([]jobs.ListRow, 0, ChunkRows)
	err = sp.Each(ctx, func(r jobs.ListRow) error {
		chunk = append(chunk, r)
		if len(chunk) < ChunkRows {
			return nil
		}
		err := w.Append(ctx, chunk)
		chunk = chunk[:0]
		return err
	})
	if err == nil && len(chunk) > 0 {
		err = w.Append(ctx, chunk)
	}
	if err != nil {
		return jobs.ListInfo{}, err
	}
	committed = true
	return w.Commit(ctx)
}
