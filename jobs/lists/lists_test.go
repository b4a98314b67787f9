package lists_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
)

// readAll reads a spool's rows.
func readAll(t testing.TB, sp *lists.Spool) []jobs.ListRow {
	t.Helper()
	var out []jobs.ListRow
	if err := sp.Each(context.Background(), func(r jobs.ListRow) error {
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRead(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		opts      lists.Options
		header    []string
		hasHeader bool
		column    int
		rows      [][]string
		keys      []string
	}{
		{
			name: "header by name", in: "Name,E-Mail\r\nJane,Jane@Example.org \r\nBob,not-an-address\r\n",
			header: []string{"Name", "E-Mail"}, hasHeader: true, column: 1,
			rows: [][]string{{"Jane", "Jane@Example.org "}, {"Bob", "not-an-address"}},
			keys: []string{"jane@example.org", ""},
		},
		{
			name: "no header", in: "a@example.org,1\nb@example.org,2",
			header: []string{"column_1", "column_2"}, column: 0,
			rows: [][]string{{"a@example.org", "1"}, {"b@example.org", "2"}},
			keys: []string{"a@example.org", "b@example.org"},
		},
		{
			name: "unknown header, column from the second row", in: "id,contact\n1,x@example.org\n",
			header: []string{"id", "contact"}, hasHeader: true, column: 1,
			rows: [][]string{{"1", "x@example.org"}}, keys: []string{"x@example.org"},
		},
		{
			name: "quotes, embedded newline and delimiter, BOM, blank lines", in: "\xef\xbb\xbfemail,note\n\n\"a@example.org\",\"x, \"\"y\"\"\nz\"\n\n",
			header: []string{"email", "note"}, hasHeader: true, column: 0,
			rows: [][]string{{"a@example.org", "x, \"y\"\nz"}}, keys: []string{"a@example.org"},
		},
		{
			name: "semicolons", in: "email;name\na@example.org;A\n",
			header: []string{"email", "name"}, hasHeader: true, column: 0,
			rows: [][]string{{"a@example.org", "A"}}, keys: []string{"a@example.org"},
		},
		{
			name: "column by name", in: "work,home\na@example.org,b@example.org\n", opts: lists.Options{Column: "HOME"},
			header: []string{"work", "home"}, hasHeader: true, column: 1,
			rows: [][]string{{"a@example.org", "b@example.org"}}, keys: []string{"b@example.org"},
		},
		{
			name: "column by number", in: "a@example.org,b@example.org\n", opts: lists.Options{Column: "2"},
			header: []string{"column_1", "column_2"}, column: 1,
			rows: [][]string{{"a@example.org", "b@example.org"}}, keys: []string{"b@example.org"},
		},
		{
			name: "text", in: "Emails\n a@example.org\n\"q\"@example.org,x\n", opts: lists.Options{Text: true},
			header: []string{"Emails"}, hasHeader: true, column: 0,
			rows: [][]string{{" a@example.org"}, {"\"q\"@example.org,x"}}, keys: []string{"a@example.org", ""},
		},
		{
			name: "text without header", in: "a@example.org", opts: lists.Options{Text: true},
			header: []string{"email"}, column: 0,
			rows: [][]string{{"a@example.org"}}, keys: []string{"a@example.org"},
		},
		{
			name: "long row", in: "email\na@example.org,x,y\n", header: []string{"email", "column_2", "column_3"}, hasHeader: true, column: 0,
			rows: [][]string{{"a@example.org", "x", "y"}}, keys: []string{"a@example.org"},
		},
		{
			name: "column past the header", in: "a,b\nx,y,c@example.org\n", opts: lists.Options{Column: "3"},
			header: []string{"a", "b", "column_3"}, hasHeader: true, column: 2,
			rows: [][]string{{"x", "y", "c@example.org"}}, keys: []string{"c@example.org"},
		},
		{
			name: "short row", in: "name,email\nJane\n", header: []string{"name", "email"}, hasHeader: true, column: 1,
			rows: [][]string{{"Jane"}}, keys: []string{""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := lists.Read(t.Context(), strings.NewReader(tc.in), &tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			if !slices.Equal(sp.Header, tc.header) || sp.HasHeader != tc.hasHeader || sp.Column != tc.column {
				t.Fatalf("header %q (%v), column %d; want %q (%v), %d", sp.Header, sp.HasHeader, sp.Column, tc.header, tc.hasHeader, tc.column)
			}
			rows := readAll(t, sp)
			if len(rows) != len(tc.rows) || sp.Rows != len(tc.rows) {
				t.Fatalf("%d rows (%d counted); want %d", len(rows), sp.Rows, len(tc.rows))
			}
			for i, r := range rows {
				if r.N != i || !slices.Equal(r.Record, tc.rows[i]) || r.Key != tc.keys[i] {
					t.Fatalf("row %d: %q, key %q; want %q, key %q", i, r.Record, r.Key, tc.rows[i], tc.keys[i])
				}
				if r.Key != "" && r.Email != strings.TrimSpace(r.Record[tc.column]) {
					t.Fatalf("row %d: email %q", i, r.Email)
				}
			}
		})
	}
}

// A list is read in the encoding it was saved in, and its rows are UTF-8.
func TestReadEncodings(t *testing.T) {
	for _, tc := range []struct {
		name, in, encoding string
		header             []string
		rows               [][]string
		keys               []string
	}{
		{
			// As Excel's "CSV (Comma delimited)" saves it.
			name: "Windows-1252", in: "First,Email\r\nJos\xe9,Jos\xe9@example.org\r\n\x80uro,e@example.org\r\n",
			encoding: "Windows-1252", header: []string{"First", "Email"},
			rows: [][]string{{"José", "José@example.org"}, {"€uro", "e@example.org"}}, keys: []string{"josé@example.org", "e@example.org"},
		},
		{
			name: "UTF-8 and Windows-1252 lines", in: "email,name\na@example.org,Zo\xc3\xab\nb@example.org,Zo\xeb\n",
			encoding: "UTF-8 and Windows-1252", header: []string{"email", "name"},
			rows: [][]string{{"a@example.org", "Zoë"}, {"b@example.org", "Zoë"}}, keys: []string{"a@example.org", "b@example.org"},
		},
		{
			name: "UTF-16LE", in: "\xff\xfee\x00m\x00a\x00i\x00l\x00\r\x00\n\x00a\x00@\x00x\x00.\x00o\x00r\x00g\x00,\x00\xe9\x00\r\x00\n\x00",
			encoding: "UTF-16", header: []string{"email", "column_2"},
			rows: [][]string{{"a@x.org", "é"}}, keys: []string{"a@x.org"},
		},
		{
			name: "UTF-16BE", in: "\xfe\xff\x00e\x00m\x00a\x00i\x00l\x00\n\x00a\x00@\x00x\x00.\x00o\x00r\x00g",
			encoding: "UTF-16", header: []string{"email"},
			rows: [][]string{{"a@x.org"}}, keys: []string{"a@x.org"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := lists.Read(t.Context(), strings.NewReader(tc.in), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			if sp.Encoding != tc.encoding || sp.State().Encoding != tc.encoding || !slices.Equal(sp.Header, tc.header) {
				t.Fatalf("read as %q, header %q; want %q, %q", sp.Encoding, sp.Header, tc.encoding, tc.header)
			}
			rows := readAll(t, sp)
			if len(rows) != len(tc.rows) {
				t.Fatalf("%d rows, want %d", len(rows), len(tc.rows))
			}
			for i, r := range rows {
				if !slices.Equal(r.Record, tc.rows[i]) || r.Key != tc.keys[i] {
					t.Fatalf("row %d: %q, key %q; want %q, key %q", i, r.Record, r.Key, tc.rows[i], tc.keys[i])
				}
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts lists.Options
		want error
		line int
	}{
		{"no column", "a,b\nc,d\n", lists.Options{}, lists.ErrNoColumn, 1},
		{"unknown column", "email\na@example.org\n", lists.Options{Column: "mail2"}, lists.ErrNoColumn, 1},
		{"too many rows", "email\na@example.org\nb@example.org\nc@example.org\n", lists.Options{MaxRows: 2}, lists.ErrTooManyRows, 4},
		{"too large", "email\n" + strings.Repeat("a@example.org\n", 100), lists.Options{MaxBytes: 100}, lists.ErrTooLarge, 0},
		{"too large, past the first buffer", "email\n" + strings.Repeat("a@example.org\n", 10000), lists.Options{MaxBytes: 100 << 10}, lists.ErrTooLarge, 0},
		{"row too long", "email\n" + strings.Repeat("a", 200) + "@example.org\n", lists.Options{MaxLineBytes: 100}, lists.ErrLineTooLong, 2},
		{"too many columns", "email,a,b,c\n", lists.Options{MaxColumns: 3}, lists.ErrTooManyColumns, 1},
		{"NUL", "email\na@exa\x00mple.org\n", lists.Options{}, lists.ErrNUL, 2},
		{"open quote", "email\n\"a@example.org\n", lists.Options{}, lists.ErrBadQuote, 2},
		{"empty", "\n\n", lists.Options{}, lists.ErrNoRows, 0},
		{"header only", "email\n", lists.Options{}, lists.ErrNoRows, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := lists.Read(t.Context(), strings.NewReader(tc.in), &tc.opts)
			if err == nil {
				sp.Close()
				t.Fatal("read")
			}
			var pe *lists.ParseError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) || pe.Line != tc.line {
				t.Fatalf("error %v; want %v at line %d", err, tc.want, tc.line)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	in := "email,name\na@example.org,1\n A@EXAMPLE.org ,2\njunk,3\nb@example.org,4\n"
	sp, err := lists.Read(t.Context(), strings.NewReader(in), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	p, err := sp.Preview(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rows != 4 || p.InvalidRows != 1 || p.Unique != 2 || p.Duplicates != 1 || p.Cost != 2 || len(p.First) != 2 || p.First[1][1] != "2" || p.Column != 0 {
		t.Fatalf("preview %+v", p)
	}
}

// FuzzRead checks that any input is read or refused with a ParseError,
// never a panic, and that a file of rows written by encoding/csv reads
// back as those rows.
func FuzzRead(f *testing.F) {
	f.Add([]byte("email,name\na@example.org,\"x\"\"y\"\n"), false)
	f.Add([]byte("\"a\nb\",c@d.org\r\n"), false)
	f.Add([]byte("x@y.org\n"), true)
	f.Add([]byte("\xef\xbb\xbfe;m\n"), false)
	f.Fuzz(func(t *testing.T, data []byte, text bool) {
		opts := lists.Options{Text: text, MaxRows: 1000, MaxBytes: 1 << 16, MaxLineBytes: 4096, MaxColumns: 64}
		sp, err := lists.Read(context.Background(), bytes.NewReader(data), &opts)
		if err != nil {
			var pe *lists.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a ParseError", err)
			}
			return
		}
		defer sp.Close()
		rows := readAll(t, sp)
		if len(rows) != sp.Rows || sp.Addresses+sp.InvalidRows != sp.Rows {
			t.Fatalf("%d rows read, %d counted (%d + %d)", len(rows), sp.Rows, sp.Addresses, sp.InvalidRows)
		}
		for _, r := range rows {
			for _, f := range r.Record {
				if !utf8.ValidString(f) || strings.ContainsRune(f, 0) {
					t.Fatalf("field %q", f)
				}
			}
			if r.Key != strings.ToLower(r.Key) || r.Key != strings.TrimSpace(r.Key) {
				t.Fatalf("key %q", r.Key)
			}
		}
		if text {
			return
		}
		// Round trip: the records written as CSV read back the same.
		var buf bytes.Buffer
		cw := csv.NewWriter(&buf)
		if sp.HasHeader {
			cw.Write(sp.Header)
		}
		for _, r := range rows {
			cw.Write(r.Record)
		}
		cw.Flush()
		again, err := lists.Read(context.Background(), &buf, &lists.Options{Column: "", MaxRows: 1000, MaxBytes: 1 << 20, MaxLineBytes: 1 << 16, MaxColumns: 64})
		if err != nil {
			return // a rewritten file may pick another delimiter or column
		}
		defer again.Close()
		if again.Column == sp.Column && again.HasHeader == sp.HasHeader {
			back := readAll(t, again)
			if len(back) != len(rows) {
				t.Fatalf("%d rows after a round trip; want %d", len(back), len(rows))
			}
		}
	})
}

// TestListSpoolUnlinked: a spool's file leaves the temporary directory
// as soon as it is created, so that a shutdown or a crash leaves nothing
// there; the spool still reads its rows, again and again, until closed.
func TestListSpoolUnlinked(t *testing.T) {
	dir := t.TempDir()
	empty := func(when string) {
		t.Helper()
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Fatalf("%s: the temporary directory holds %v (%v)", when, ents, err)
		}
	}
	sp, err := lists.Read(context.Background(), strings.NewReader("email\na@good.com\nb@good.com\n"), &lists.Options{TempDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	empty("with the spool open")
	for range 2 {
		var got []string
		if err := sp.Each(context.Background(), func(r jobs.ListRow) error { got = append(got, r.Record[0]); return nil }); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != "a@good.com,b@good.com" {
			t.Fatalf("rows %v", got)
		}
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sp.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
	// A file refused while it is read leaves nothing either.
	if _, err := lists.Read(context.Background(), strings.NewReader("email\na@good.com\nb@good.com\n"), &lists.Options{TempDir: dir, MaxRows: 1}); err == nil {
		t.Fatal("a list beyond MaxRows is read")
	}
	empty("after Close and a refused file")
}

// A spool's rows written out and restored read as the original's; bytes
// that do not match their description are refused.
func TestSpoolRestore(t *testing.T) {
	ctx := t.Context()
	sp, err := lists.Read(ctx, strings.NewReader("name,email\nAnn,ann@example.org\nBob,nope\nCid,ANN@example.org\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var buf bytes.Buffer
	if n, err := sp.WriteTo(&buf); err != nil || n != sp.Size {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	st := sp.State()
	rs, err := lists.Restore(ctx, bytes.NewReader(buf.Bytes()), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	want, _ := sp.Preview(ctx, 10)
	got, err := rs.Preview(ctx, 10)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("restored preview %+v, %v; want %+v", got, err, want)
	}
	for _, c := range []struct {
		name  string
		bytes []byte
		st    func(lists.SpoolState) lists.SpoolState
	}{
		{"short", buf.Bytes()[:buf.Len()-1], nil},
		{"long", append(bytes.Clone(buf.Bytes()), 0), nil},
		{"fewer rows", buf.Bytes(), func(s lists.SpoolState) lists.SpoolState { s.Rows, s.InvalidRows = 2, 0; return s }},
		{"other addresses", buf.Bytes(), func(s lists.SpoolState) lists.SpoolState { s.Addresses, s.InvalidRows = 3, 0; return s }},
		{"column out of range", buf.Bytes(), func(s lists.SpoolState) lists.SpoolState { s.Column = 5; return s }},
	} {
		s := st
		if c.st != nil {
			s = c.st(st)
		}
		if rs, err := lists.Restore(ctx, bytes.NewReader(c.bytes), s, nil); !errors.Is(err, lists.ErrBadSpool) {
			if rs != nil {
				rs.Close()
			}
			t.Errorf("%s: %v, want ErrBadSpool", c.name, err)
		}
	}
}
