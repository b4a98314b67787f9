package lists

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/validmail/validmail/jobs/lists/charset"
)

// Errors of a list that cannot be read. Each reaches the caller inside a
// [*ParseError] naming the line, and matches with errors.Is.
var (
	// ErrNoColumn: no column holds addresses, or ?column= names none.
	ErrNoColumn = errors.New("lists: no address column")
	// ErrTooManyRows: more data rows than [Options.MaxRows].
	ErrTooManyRows = errors.New("lists: too many rows")
	// ErrTooLarge: more bytes than [Options.MaxBytes].
	ErrTooLarge = errors.New("lists: file too large")
	// ErrLineTooLong: a row longer than [Options.MaxLineBytes].
	ErrLineTooLong = errors.New("lists: row too long")
	// ErrTooManyColumns: a row of more fields than [Options.MaxColumns].
	ErrTooManyColumns = errors.New("lists: too many columns")
	// ErrBadEncoding: text that is not UTF-8. [Read] decodes whatever
	// [charset] reads and no longer returns it; it stays for callers that
	// match it.
	ErrBadEncoding = errors.New("lists: not UTF-8")
	// ErrNUL: a NUL byte (a binary file).
	ErrNUL = errors.New("lists: NUL byte")
	// ErrBadQuote: a quoted field that never ends.
	ErrBadQuote = errors.New("lists: unterminated quoted field")
	// ErrNoRows: a file without a data row.
	ErrNoRows = errors.New("lists: no rows")
)

// ParseError is an error of the list at a line (numbered from 1; 0 for the
// file as a whole).
type ParseError struct {
	Line int
	Err  error
}

// Error implements error.
func (e *ParseError) Error() string {
	if e.Line == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (line %d)", e.Err, e.Line)
}

// Unwrap returns the sentinel error.
func (e *ParseError) Unwrap() error { return e.Err }

// limitReader counts bytes and fails past its limit.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more tells a file of exactly the limit from a longer
		// one.
		var b [1]byte
		n, err := l.r.Read(b[:])
		if n > 0 {
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// recordReader reads records (CSV with a delimiter, or one field a line)
// of text decoded by [charset] within the bounds of its options, without
// ever holding more than one record.
type recordReader struct {
	br        *bufio.Reader
	dec       *charset.Reader
	text      bool
	delim     byte
	maxLine   int
	maxFields int
	line      int // lines read
	field     []byte
	fields    []string
}

func newRecordReader(r io.Reader, text bool, o Options) (*recordReader, error) {
	// The bound counts the customer's bytes, before they are decoded.
	dec := charset.NewReader(&limitReader{r: r, left: o.MaxBytes})
	br := bufio.NewReaderSize(dec, 64<<10)
	if _, err := br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
		return nil, &ParseError{Err: err}
	}
	rr := &recordReader{br: br, dec: dec, text: text, delim: ',', maxLine: o.MaxLineBytes, maxFields: o.MaxColumns}
	if !text {
		rr.delim = sniffDelimiter(br, o.MaxLineBytes)
	}
	return rr, nil
}

// sniffDelimiter picks the delimiter the first line uses most outside
// quotes among comma, semicolon and tab; a comma when none.
func sniffDelimiter(br *bufio.Reader, maxLine int) byte {
	buf, _ := br.Peek(min(maxLine, br.Size()))
	counts := map[byte]int{}
	quoted := false
	for _, c := range buf {
		if c == '"' {
			quoted = !quoted
			continue
		}
		if quoted {
			continue
		}
		if c == '\n' || c == '\r' {
			break
		}
		if c == ',' || c == ';' || c == '\t' {
			counts[c]++
		}
	}
	best := byte(',')
	for _, c := range []byte{';', '\t'} {
		if counts[c] > counts[best] {
			best = c
		}
	}
	return best
}

func (rr *recordReader) lineNo() int { return rr.line }

func (rr *recordReader) encoding() string { return rr.dec.Encoding() }

// next returns the next record, skipping blank lines; io.EOF at the end.
// The returned slice is reused by the following call.
func (rr *recordReader) next() ([]string, error) {
	for {
		rec, blank, err := rr.read()
		if err != nil {
			return nil, err
		}
		if !blank {
			return rec, nil
		}
	}
}

// fail names the line of a read's error; a file too large is the file's
// fault, found ahead of the line being read.
func (rr *recordReader) fail(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return &ParseError{Err: ErrTooLarge}
	}
	return &ParseError{Line: rr.line, Err: err}
}

// read reads one record; blank reports an empty line.
func (rr *recordReader) read() (rec []string, blank bool, err error) {
	rr.fields = rr.fields[:0]
	rr.field = rr.field[:0]
	size := 0
	quoted, afterQuote, started := false, false, false
	rr.line++
	startLine := rr.line
	end := func() error {
		if len(rr.fields) == rr.maxFields {
			return &ParseError{Line: startLine, Err: ErrTooManyColumns}
		}
		rr.fields = append(rr.fields, string(rr.field))
		rr.field = rr.field[:0]
		return nil
	}
	for {
		c, err := rr.br.ReadByte()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				return nil, false, rr.fail(err)
			}
			if quoted {
				return nil, false, &ParseError{Line: startLine, Err: ErrBadQuote}
			}
			if size == 0 {
				return nil, false, io.EOF
			}
			if err := end(); err != nil {
				return nil, false, err
			}
			return rr.fields, false, nil
		}
		size++
		if size > rr.maxLine {
			return nil, false, &ParseError{Line: startLine, Err: ErrLineTooLong}
		}
		if c == 0 {
			return nil, false, rr.fail(ErrNUL)
		}
		if quoted {
			switch {
			case c == '"':
				if p, _ := rr.br.Peek(1); len(p) == 1 && p[0] == '"' {
					rr.br.ReadByte()
					size++
					rr.field = append(rr.field, '"')
				} else {
					quoted, afterQuote = false, true
				}
			default:
				if c == '\n' {
					rr.line++
				}
				rr.field = append(rr.field, c)
			}
			continue
		}
		switch {
		case c == '\n' || c == '\r':
			if c == '\r' {
				if p, _ := rr.br.Peek(1); len(p) == 1 && p[0] == '\n' {
					rr.br.ReadByte()
				}
			}
			if size == 1 && len(rr.fields) == 0 {
				return nil, true, nil
			}
			if err := end(); err != nil {
				return nil, false, err
			}
			return rr.fields, false, nil
		case !rr.text && c == rr.delim:
			if err := end(); err != nil {
				return nil, false, err
			}
			started, afterQuote = false, false
		case !rr.text && c == '"' && !started && !afterQuote:
			quoted, started = true, true
		default:
			// A quote inside an unquoted field, or text after a closing
			// quote, is kept as it is.
			started = true
			rr.field = append(rr.field, c)
		}
	}
}
