package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/validmail/validmail/jobs/lists/charset"
)

// errNoEmailColumn is returned when a CSV input has no recognisable email
// column and -column was not given.
var errNoEmailColumn = errors.New("cannot find the email column: name it with -column NAME or -column INDEX")

// errUnclosedQuote marks a CSV line with a quoted field that is never
// closed.
var errUnclosedQuote = errors.New("quoted field never closed")

// delimiters are the CSV field separators recognised, in order of
// preference.
var delimiters = []byte{',', ';', '\t', '|'}

// emailHeaders are the normalised header names taken as the email column.
var emailHeaders = map[string]bool{
	"email": true, "emailaddress": true, "emails": true,
	"mail": true, "mailaddress": true,
}

// normalizeHeader lower-cases a header name and drops everything but
// letters and digits, so "E-Mail", "email_address" and "Email Address"
// compare equal to their plain forms.
func normalizeHeader(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// format describes how the input is read.
type format struct {
	csv    bool
	comma  byte
	header []string // the CSV header row; nil when the input has none
	column int      // 0-based index of the email field
	width  int      // fields before the result columns in CSV output
}

// row is one record of the input.
type row struct {
	line   int      // first physical line
	lines  int      // physical lines it spans
	fields []string // CSV fields; nil for plain text
	email  string   // the address to validate, without surrounding spaces
	err    error    // a parse problem: the row is kept as INVALID_FORMAT
	end    int64    // input bytes consumed through the end of the row
}

// input reads rows from plain text or CSV.
type input struct {
	dec    *charset.Reader
	lr     *lineReader
	format format
	parser *recordParser
	blank  int // blank lines skipped
}

// openInput reads r as UTF-8 text (UTF-8, UTF-16 with a byte order mark,
// else Windows-1252 line by line: package charset), reads its first line
// to find the format and returns a
// reader positioned on the first row (after the header, if any). column is
// the -column flag ("" for automatic detection). An input with no lines is
// plain text with no rows.
func openInput(r io.Reader, column string) (*input, error) {
	dec := charset.NewReader(r)
	in := &input{dec: dec, lr: newLineReader(dec)}
	var first physLine
	for {
		l, err := in.lr.next()
		if errors.Is(err, io.EOF) {
			if column != "" {
				in.format = format{csv: true, comma: ',', width: 1}
			}
			return in, nil
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(l.text) != "" {
			first = l
			break
		}
		in.blank++
	}
	in.lr.pushBack(first)
	f, err := detect(first.text, column)
	if err != nil {
		return nil, err
	}
	in.format = f
	if !f.csv {
		return in, nil
	}
	in.parser = newRecordParser(f.comma)
	if f.header != nil {
		// Consume the header record itself (it may span lines).
		if _, err := in.next(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
	}
	return in, nil
}

// detect decides the format from the first non-blank line.
func detect(line, column string) (format, error) {
	if column != "" {
		return detectColumn(line, column)
	}
	for _, d := range delimiters {
		fields := lazyFields(line, d)
		for i, h := range fields {
			if emailHeaders[normalizeHeader(h)] {
				return format{csv: true, comma: d, header: fields, column: i, width: len(fields)}, nil
			}
		}
	}
	// No header: a line holding a delimiter is a CSV row (an address in
	// plain text cannot hold one), and the first field with an "@" is the
	// address.
	for _, d := range delimiters {
		if strings.IndexByte(line, d) < 0 {
			continue
		}
		fields := lazyFields(line, d)
		for i, f := range fields {
			if strings.Contains(f, "@") {
				return format{csv: true, comma: d, column: i, width: len(fields)}, nil
			}
		}
		return format{}, errNoEmailColumn
	}
	return format{}, nil
}

// detectColumn handles -column NAME (matched against the header, any
// delimiter) and -column INDEX (1-based; the delimiter is the most frequent
// one in the line, and the line is a header unless that field holds an
// "@").
func detectColumn(line, column string) (format, error) {
	if idx, err := strconv.Atoi(column); err == nil {
		if idx < 1 {
			return format{}, fmt.Errorf("-column %d: indexes start at 1", idx)
		}
		comma, best := byte(','), 0
		for _, d := range delimiters {
			if n := strings.Count(line, string(d)); n > best {
				comma, best = d, n
			}
		}
		fields := lazyFields(line, comma)
		f := format{csv: true, comma: comma, column: idx - 1, width: max(len(fields), idx)}
		if idx <= len(fields) && !strings.Contains(fields[idx-1], "@") {
			f.header = fields
		}
		return f, nil
	}
	want := strings.ToLower(strings.TrimSpace(column))
	for _, d := range delimiters {
		fields := lazyFields(line, d)
		for i, h := range fields {
			if strings.ToLower(strings.TrimSpace(h)) == want {
				return format{csv: true, comma: d, header: fields, column: i, width: len(fields)}, nil
			}
		}
	}
	return format{}, fmt.Errorf("-column %q: no such column in the header", column)
}

// next returns the next row, or io.EOF after the last. Errors other than
// io.EOF are read errors of the underlying input; problems with the data
// itself are reported in row.err.
func (in *input) next() (row, error) {
	for {
		l, err := in.lr.next()
		if err != nil {
			return row{}, err
		}
		if strings.TrimSpace(l.text) == "" {
			in.blank++
			continue
		}
		if !in.format.csv {
			r := row{line: l.num, lines: 1, email: strings.TrimSpace(l.text), end: l.end}
			if l.tooLong {
				r.err = errLineTooLong
			}
			return r, nil
		}
		return in.record(l)
	}
}

// record assembles the CSV record starting with line first, following
// quoted fields over line ends, and parses it.
func (in *input) record(first physLine) (row, error) {
	comma := in.format.comma
	lines := []physLine{first}
	text := first.text
	open := quoteOpen(first.text, comma, false)
	tooLong := first.tooLong
	for open && !tooLong {
		l, err := in.lr.next()
		if err != nil && !errors.Is(err, io.EOF) {
			return row{}, err
		}
		if err != nil || len(lines) >= maxRecordLines || len(text)+len(l.text) > maxRecordBytes {
			// Never closed: report the first line alone and read the
			// following lines again as records of their own.
			if err == nil {
				in.lr.pushBack(append(lines[1:], l)...)
			} else {
				in.lr.pushBack(lines[1:]...)
			}
			return in.finish(row{line: first.num, lines: 1, end: first.end,
				fields: lazyFields(first.text, comma),
				err:    errUnclosedQuote}), nil
		}
		lines = append(lines, l)
		text += "\n" + l.text
		open = quoteOpen(l.text, comma, true)
		tooLong = l.tooLong
	}
	last := lines[len(lines)-1]
	r := row{line: first.num, lines: len(lines), end: last.end}
	if tooLong {
		r.fields, r.err = lazyFields(text, comma), errLineTooLong
		return in.finish(r), nil
	}
	r.fields, r.err = in.parser.parse(text)
	if r.err != nil && len(lines) > 1 {
		// A quote opened a field that only a later line closed, and the
		// result is not valid CSV: most likely a stray quote. Blame the
		// first line alone and read the others as records of their own.
		in.lr.pushBack(lines[1:]...)
		return in.finish(row{line: first.num, lines: 1, end: first.end,
			fields: lazyFields(first.text, comma), err: errUnclosedQuote}), nil
	}
	if r.err != nil {
		r.fields = lazyFields(text, comma)
	}
	return in.finish(r), nil
}

// finish picks the address out of a CSV row.
func (in *input) finish(r row) row {
	if c := in.format.column; c < len(r.fields) {
		r.email = strings.TrimSpace(r.fields[c])
	}
	return r
}

// quoteOpen reports whether a quoted field is still open at the end of
// line, under RFC 4180: a quote opens a field only at its start, and
// inside a quoted field "" is a literal quote. open says whether the line
// starts inside a quoted field.
func quoteOpen(line string, comma byte, open bool) bool {
	fieldStart := !open
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case open:
			if c == '"' {
				if i+1 < len(line) && line[i+1] == '"' {
					i++
				} else {
					open = false
				}
			}
		case c == comma:
			fieldStart = true
			continue
		case c == '"' && fieldStart:
			open = true
		}
		fieldStart = false
	}
	return open
}

// lazyFields splits text into fields as leniently as encoding/csv can,
// for a header guess or for keeping a malformed row's data. It never
// fails: as a last resort it splits on the delimiter.
func lazyFields(text string, comma byte) []string {
	cr := csv.NewReader(strings.NewReader(text))
	cr.Comma = rune(comma)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	var fields []string
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return strings.Split(text, string(comma))
		}
		if fields != nil {
			// A record over several lines: keep the line end in the field,
			// as a strict parse would.
			fields[len(fields)-1] += "\n" + rec[0]
			rec = rec[1:]
		}
		fields = append(fields, rec...)
	}
	if fields == nil {
		fields = []string{""}
	}
	return fields
}

// recordParser parses one CSV record at a time with a strict (RFC 4180)
// encoding/csv Reader, reused across records to avoid an allocation of
// its buffer per row.
type recordParser struct {
	comma byte
	feed  feeder
	cr    *csv.Reader
	fed   int64
}

// feeder hands the csv.Reader one record at a time.
type feeder struct{ s string }

func (f *feeder) Read(p []byte) (int, error) {
	if f.s == "" {
		return 0, io.EOF
	}
	n := copy(p, f.s)
	f.s = f.s[n:]
	return n, nil
}

func newRecordParser(comma byte) *recordParser {
	p := &recordParser{comma: comma}
	p.reset()
	return p
}

func (p *recordParser) reset() {
	p.feed.s = ""
	p.cr = csv.NewReader(&p.feed)
	p.cr.Comma = rune(p.comma)
	p.cr.FieldsPerRecord = -1
	p.fed = 0
}

// parse parses text, one complete record, strictly.
func (p *recordParser) parse(text string) ([]string, error) {
	p.feed.s = text + "\n"
	p.fed += int64(len(text) + 1)
	rec, err := p.cr.Read()
	if err != nil || p.cr.InputOffset() != p.fed || p.feed.s != "" {
		// Out of step with the record boundaries (after an error the
		// reader may hold part of the record): start afresh.
		p.reset()
		if err == nil || errors.Is(err, io.EOF) {
			err = errors.New("malformed record")
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = fmt.Errorf("%w (at byte %d)", pe.Err, pe.Column)
		}
		return nil, err
	}
	return rec, nil
}
