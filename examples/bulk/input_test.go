package main

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// gotRow is the part of a row the tests compare.
type gotRow struct {
	line   int
	email  string
	fields []string
	bad    bool
}

// readAll opens text and reads every row.
func readAll(t *testing.T, text, column string) (format, []gotRow, int) {
	t.Helper()
	in, err := openInput(strings.NewReader(text), column)
	if err != nil {
		t.Fatalf("openInput: %v", err)
	}
	var rows []gotRow
	var lastEnd int64
	for {
		r, err := in.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if r.end <= lastEnd || r.end > int64(len(text)) {
			t.Errorf("line %d: end offset %d after %d (input %d bytes)", r.line, r.end, lastEnd, len(text))
		}
		lastEnd = r.end
		rows = append(rows, gotRow{line: r.line, email: r.email, fields: r.fields, bad: r.err != nil})
	}
	return in.format, rows, in.blank
}

// A file as Excel saves it (Windows-1252), or in UTF-16, is read as
// UTF-8.
func TestInputEncodings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text string }{
		{"Windows-1252", "Name,Email\r\nJos\xe9,jose@x.org\r\n"},
		{"UTF-16LE", "\xff\xfeN\x00a\x00m\x00e\x00,\x00E\x00m\x00a\x00i\x00l\x00\n\x00J\x00o\x00s\x00\xe9\x00,\x00j\x00o\x00s\x00e\x00@\x00x\x00.\x00o\x00r\x00g\x00"},
		{"UTF-8 with BOM", "\xef\xbb\xbfName,Email\nJos\xc3\xa9,jose@x.org\n"},
	} {
		in, err := openInput(strings.NewReader(c.text), "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		r, err := in.next()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := []string{"José", "jose@x.org"}; !reflect.DeepEqual(in.format.header, []string{"Name", "Email"}) || !reflect.DeepEqual(r.fields, want) || r.email != "jose@x.org" {
			t.Errorf("%s: header %q, row %q (%q); want %q", c.name, in.format.header, r.fields, r.email, want)
		}
	}
}

func TestInputRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string
		column string
		csv    bool
		comma  byte
		header []string
		rows   []gotRow
		blank  int
	}{
		{
			name: "plain",
			text: "a@x.org\nb@y.org\n",
			rows: []gotRow{{line: 1, email: "a@x.org"}, {line: 2, email: "b@y.org"}},
		},
		{
			name: "plain without final newline",
			text: "a@x.org\nb@y.org",
			rows: []gotRow{{line: 1, email: "a@x.org"}, {line: 2, email: "b@y.org"}},
		},
		{
			name:  "plain with BOM, CRLF, blank lines and spaces",
			text:  "\ufeff\r\n a@x.org \r\n\r\n   \r\nb@y.org\r\n",
			rows:  []gotRow{{line: 2, email: "a@x.org"}, {line: 5, email: "b@y.org"}},
			blank: 3,
		},
		{
			name:   "plain header word is a one-column CSV",
			text:   "Email\na@x.org\n",
			csv:    true,
			comma:  ',',
			header: []string{"Email"},
			rows:   []gotRow{{line: 2, email: "a@x.org", fields: []string{"a@x.org"}}},
		},
		{
			name:   "CSV header E-Mail",
			text:   "name,E-Mail,age\nAnn,ann@x.org,30\nBob, bob@y.org ,40\n",
			csv:    true,
			comma:  ',',
			header: []string{"name", "E-Mail", "age"},
			rows: []gotRow{
				{line: 2, email: "ann@x.org", fields: []string{"Ann", "ann@x.org", "30"}},
				{line: 3, email: "bob@y.org", fields: []string{"Bob", " bob@y.org ", "40"}},
			},
		},
		{
			name:   "CSV header email_address with BOM and CRLF",
			text:   "\ufeffid,email_address\r\n1,a@x.org\r\n2,b@y.org\r\n",
			csv:    true,
			comma:  ',',
			header: []string{"id", "email_address"},
			rows: []gotRow{
				{line: 2, email: "a@x.org", fields: []string{"1", "a@x.org"}},
				{line: 3, email: "b@y.org", fields: []string{"2", "b@y.org"}},
			},
		},
		{
			name:   "semicolon CSV with header Mail",
			text:   "Nom;Mail\nAnn;ann@x.org\n",
			csv:    true,
			comma:  ';',
			header: []string{"Nom", "Mail"},
			rows:   []gotRow{{line: 2, email: "ann@x.org", fields: []string{"Ann", "ann@x.org"}}},
		},
		{
			name:   "tab separated with header Email Address",
			text:   "Email Address\tName\na@x.org\tAnn\n",
			csv:    true,
			comma:  '\t',
			header: []string{"Email Address", "Name"},
			rows:   []gotRow{{line: 2, email: "a@x.org", fields: []string{"a@x.org", "Ann"}}},
		},
		{
			name:  "headerless CSV: the field with an @",
			text:  "Ann,ann@x.org\nBob,bob@y.org\n",
			csv:   true,
			comma: ',',
			rows: []gotRow{
				{line: 1, email: "ann@x.org", fields: []string{"Ann", "ann@x.org"}},
				{line: 2, email: "bob@y.org", fields: []string{"Bob", "bob@y.org"}},
			},
		},
		{
			name:   "-column NAME",
			text:   "primary,backup\na@x.org,b@y.org\n",
			column: "Backup",
			csv:    true,
			comma:  ',',
			header: []string{"primary", "backup"},
			rows:   []gotRow{{line: 2, email: "b@y.org", fields: []string{"a@x.org", "b@y.org"}}},
		},
		{
			name:   "-column INDEX with a header",
			text:   "who;contact\nAnn;ann@x.org\n",
			column: "2",
			csv:    true,
			comma:  ';',
			header: []string{"who", "contact"},
			rows:   []gotRow{{line: 2, email: "ann@x.org", fields: []string{"Ann", "ann@x.org"}}},
		},
		{
			name:   "-column INDEX without a header",
			text:   "Ann,ann@x.org\nBob\n",
			column: "2",
			csv:    true,
			comma:  ',',
			rows: []gotRow{
				{line: 1, email: "ann@x.org", fields: []string{"Ann", "ann@x.org"}},
				{line: 2, email: "", fields: []string{"Bob"}},
			},
		},
		{
			name:   "CSV blank lines are skipped, empty fields kept",
			text:   "email,n\n\na@x.org,1\n  \n,2\n",
			csv:    true,
			comma:  ',',
			header: []string{"email", "n"},
			rows: []gotRow{
				{line: 3, email: "a@x.org", fields: []string{"a@x.org", "1"}},
				{line: 5, email: "", fields: []string{"", "2"}},
			},
			blank: 2,
		},
		{
			name:   "quoted field over two lines",
			text:   "email,note\na@x.org,\"two\r\nlines\"\nb@y.org,x\n",
			csv:    true,
			comma:  ',',
			header: []string{"email", "note"},
			rows: []gotRow{
				{line: 2, email: "a@x.org", fields: []string{"a@x.org", "two\nlines"}},
				{line: 4, email: "b@y.org", fields: []string{"b@y.org", "x"}},
			},
		},
		{
			name:   "malformed rows keep their line numbers",
			text:   "email,name\na@x.org,O\"Brien\n\"b@y.org,Bob\nc@z.org,\"Carl\"x\nd@w.org,Dan\n",
			csv:    true,
			comma:  ',',
			header: []string{"email", "name"},
			rows: []gotRow{
				{line: 2, email: "a@x.org", fields: []string{"a@x.org", "O\"Brien"}, bad: true},
				{line: 3, email: "b@y.org,Bob", fields: []string{"b@y.org,Bob"}, bad: true},
				{line: 4, email: "c@z.org", fields: []string{"c@z.org", "Carl\"x"}, bad: true},
				{line: 5, email: "d@w.org", fields: []string{"d@w.org", "Dan"}},
			},
		},
		{
			name:   "stray quote swallowing later lines is undone",
			text:   "email,note\na@x.org,\"oops\nb@y.org,fine\nc@z.org,\"quoted\"\n",
			csv:    true,
			comma:  ',',
			header: []string{"email", "note"},
			rows: []gotRow{
				{line: 2, email: "a@x.org", fields: []string{"a@x.org", "oops"}, bad: true},
				{line: 3, email: "b@y.org", fields: []string{"b@y.org", "fine"}},
				{line: 4, email: "c@z.org", fields: []string{"c@z.org", "quoted"}},
			},
		},
		{
			name:   "unclosed quote at the end of the input",
			text:   "email,note\na@x.org,ok\nb@y.org,\"never closed\n",
			csv:    true,
			comma:  ',',
			header: []string{"email", "note"},
			rows: []gotRow{
				{line: 2, email: "a@x.org", fields: []string{"a@x.org", "ok"}},
				{line: 3, email: "b@y.org", fields: []string{"b@y.org", "never closed"}, bad: true},
			},
		},
		{
			name: "empty input",
			text: "",
		},
		{
			name:  "only blank lines",
			text:  "\n\r\n \n",
			blank: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, rows, blank := readAll(t, tt.text, tt.column)
			if f.csv != tt.csv || (tt.csv && f.comma != tt.comma) || !reflect.DeepEqual(f.header, tt.header) {
				t.Errorf("format = csv %v comma %q header %q; want csv %v comma %q header %q",
					f.csv, f.comma, f.header, tt.csv, tt.comma, tt.header)
			}
			if !reflect.DeepEqual(rows, tt.rows) {
				t.Errorf("rows:\n got %+v\nwant %+v", rows, tt.rows)
			}
			if blank != tt.blank {
				t.Errorf("blank lines = %d, want %d", blank, tt.blank)
			}
		})
	}
}

func TestInputErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, column, want string
	}{
		{"no email column", "name,age\nAnn,3\n", "", "cannot find the email column"},
		{"unknown column name", "name,email\n", "mail", `no such column`},
		{"column index zero", "a@x.org\n", "0", "indexes start at 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := openInput(strings.NewReader(tt.text), tt.column)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("openInput error = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestLongLine(t *testing.T) {
	t.Parallel()
	text := "a@x.org\n" + strings.Repeat("b", maxLineBytes+10) + "\nc@y.org\n"
	_, rows, _ := readAll(t, text, "")
	if len(rows) != 3 {
		t.Fatalf("got %d rows, want 3", len(rows))
	}
	if !rows[1].bad || len(rows[1].email) != maxLineBytes || rows[1].line != 2 {
		t.Errorf("long line: bad=%v len=%d line=%d", rows[1].bad, len(rows[1].email), rows[1].line)
	}
	if rows[2].email != "c@y.org" || rows[2].line != 3 {
		t.Errorf("line after the long one = %+v", rows[2])
	}
}

func TestQuoteOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line       string
		open, want bool
	}{
		{`a,b,c`, false, false},
		{`a,"b`, false, true},
		{`a,"b""c`, false, true},
		{`a,"b""c"`, false, false},
		{`a,b"c`, false, false},
		{`"a,b`, false, true},
		{`still inside`, true, true},
		{`end",x`, true, false},
		{`""`, true, true},
	}
	for _, tt := range tests {
		if got := quoteOpen(tt.line, ',', tt.open); got != tt.want {
			t.Errorf("quoteOpen(%q, open=%v) = %v, want %v", tt.line, tt.open, got, tt.want)
		}
	}
}

func FuzzInput(f *testing.F) {
	f.Add("email,name\na@x.org,\"Ann\"\n", "")
	f.Add("\ufeffa@x.org\r\n\r\nb@y.org", "")
	f.Add("x;\"y\n\"z@w;\"\n", "2")
	f.Fuzz(func(t *testing.T, text, column string) {
		in, err := openInput(strings.NewReader(text), column)
		if err != nil {
			return
		}
		line := 0
		var end int64
		for {
			r, err := in.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			if r.line <= line || r.end <= end || r.end > int64(len(text)) {
				t.Fatalf("row out of order: line %d after %d, end %d after %d", r.line, line, r.end, end)
			}
			line, end = r.line+r.lines-1, r.end
		}
	})
}
