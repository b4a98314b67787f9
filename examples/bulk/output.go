package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/resultcsv"
)

// rowWriter writes validated rows in one output format.
type rowWriter interface {
	// header writes what precedes the rows, if anything.
	header() error
	// write writes one row with its result.
	write(r row, res emailcheck.Result) error
	// flush writes out buffered rows.
	flush() error
}

// newRowWriter returns the writer for the -format flag.
func newRowWriter(w io.Writer, name string, f format) (rowWriter, error) {
	bw := bufio.NewWriterSize(w, 256<<10)
	switch name {
	case "csv":
		return &csvWriter{bw: bw, cw: csv.NewWriter(bw), f: f}, nil
	case "jsonl":
		return &jsonlWriter{bw: bw, f: f, names: uniqueNames(f.header)}, nil
	}
	return nil, fmt.Errorf("unknown format %q (want csv or jsonl)", name)
}

// csvWriter writes the input fields followed by the result columns. The
// first format.width fields come first (short rows are padded with empty
// fields), then the result columns, then any extra fields of a row longer
// than the header, so that the result columns stay aligned.
type csvWriter struct {
	bw  *bufio.Writer
	cw  *csv.Writer
	f   format
	rec []string
}

func (w *csvWriter) header() error {
	var h []string
	switch {
	case !w.f.csv:
		h = []string{"email"}
	case w.f.header != nil:
		h = append(h, w.f.header...)
		for len(h) < w.f.width {
			h = append(h, "")
		}
	default:
		for i := range w.f.width {
			h = append(h, "field"+strconv.Itoa(i+1))
		}
	}
	return w.cw.Write(resultcsv.Header(h))
}

func (w *csvWriter) write(r row, res emailcheck.Result) error {
	rec := w.rec[:0]
	if !w.f.csv {
		rec = append(rec, r.email)
	} else {
		n := min(len(r.fields), w.f.width)
		rec = append(rec, r.fields[:n]...)
		for range w.f.width - n {
			rec = append(rec, "")
		}
	}
	rec = resultcsv.Append(rec, &res)
	if w.f.csv && len(r.fields) > w.f.width {
		rec = append(rec, r.fields[w.f.width:]...)
	}
	w.rec = rec
	return w.cw.Write(rec)
}

func (w *csvWriter) flush() error {
	w.cw.Flush()
	if err := w.cw.Error(); err != nil {
		return err
	}
	return w.bw.Flush()
}

// jsonlWriter writes one JSON object per row:
//
//	{"line":2,"row":{"name":"Ann","email":"ann@x.org"},"email":"ann@x.org","result":{...}}
//
// "row" maps header names to fields (CSV with a header), "fields" lists the
// fields (CSV without a header) and "extra" the fields beyond the header;
// "error" explains a row that could not be parsed.
type jsonlWriter struct {
	bw    *bufio.Writer
	f     format
	names []string
}

// jsonRow is the shape of one JSON Lines record; the row object is
// pre-encoded to keep the header's column order.
type jsonRow struct {
	Line   int               `json:"line"`
	Row    json.RawMessage   `json:"row,omitempty"`
	Fields []string          `json:"fields,omitempty"`
	Extra  []string          `json:"extra,omitempty"`
	Email  string            `json:"email"`
	Error  string            `json:"error,omitempty"`
	Result emailcheck.Result `json:"result"`
}

func (w *jsonlWriter) header() error { return nil }

func (w *jsonlWriter) write(r row, res emailcheck.Result) error {
	out := jsonRow{Line: r.line, Email: r.email, Result: res}
	if r.err != nil {
		out.Error = r.err.Error()
	}
	switch {
	case !w.f.csv:
	case w.f.header != nil:
		obj, err := orderedObject(w.names, r.fields)
		if err != nil {
			return err
		}
		out.Row = obj
		if len(r.fields) > len(w.names) {
			out.Extra = r.fields[len(w.names):]
		}
	default:
		out.Fields = r.fields
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	w.bw.Write(b)
	return w.bw.WriteByte('\n')
}

func (w *jsonlWriter) flush() error { return w.bw.Flush() }

// orderedObject encodes names[i]: fields[i] as a JSON object in header
// order; missing fields are "".
func orderedObject(names, fields []string) (json.RawMessage, error) {
	b := []byte{'{'}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(n)
		if err != nil {
			return nil, err
		}
		v := ""
		if i < len(fields) {
			v = fields[i]
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), val...)
	}
	return append(b, '}'), nil
}

// uniqueNames makes header names usable as JSON keys: an empty name
// becomes "fieldN" and a repeated one gets a "_2", "_3"... suffix.
func uniqueNames(header []string) []string {
	if header == nil {
		return nil
	}
	seen := make(map[string]bool, len(header))
	names := make([]string, len(header))
	for i, h := range header {
		if h == "" {
			h = "field" + strconv.Itoa(i+1)
		}
		n := h
		for k := 2; seen[n]; k++ {
			n = h + "_" + strconv.Itoa(k)
		}
		seen[n] = true
		names[i] = n
	}
	return names
}
