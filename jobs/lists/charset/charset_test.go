package charset_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/validmail/validmail/jobs/lists/charset"
)

func cp1252(t testing.TB, s string) string {
	t.Helper()
	b, err := charmap.Windows1252.NewEncoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func utf16(t testing.TB, s string, order unicode.Endianness, bom unicode.BOMPolicy) string {
	t.Helper()
	b, err := unicode.UTF16(order, bom).NewEncoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t testing.TB, in string) (string, string) {
	t.Helper()
	r := charset.NewReader(iotest.HalfReader(strings.NewReader(in)))
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), r.Encoding()
}

func TestReader(t *testing.T) {
	long := strings.Repeat("é", charset.BufferSize) // a line of two buffers, a character across the cut
	for _, c := range []struct {
		name, in, want, enc string
	}{
		{"Empty", "", "", charset.UTF8},
		{"ASCII", "a@x.com\r\nb@x.com", "a@x.com\r\nb@x.com", charset.UTF8},
		{"UTF8", "josé@x.com\n", "josé@x.com\n", charset.UTF8},
		{"UTF8BOM", "\ufeffjosé@x.com\n", "josé@x.com\n", charset.UTF8},
		{"UTF8BOMBadLine", "\ufeffa\n\xe9\n", "a\n\uFFFD\n", charset.UTF8},
		{"Excel", cp1252(t, "First,Email\r\nJosé,jose@x.com\r\n€uro,z@x.com\r\n"), "First,Email\r\nJosé,jose@x.com\r\n€uro,z@x.com\r\n", charset.Windows1252},
		{"Mixed", "José\n" + cp1252(t, "Zoë\n") + "Ann", "José\nZoë\nAnn", charset.Mixed},
		{"Undefined1252", "a\x81\n", "a\uFFFD\n", charset.Windows1252},
		{"UTF16LE", utf16(t, "email\r\nzoë@x.com\r\n", unicode.LittleEndian, unicode.UseBOM), "email\r\nzoë@x.com\r\n", charset.UTF16},
		{"UTF16BE", utf16(t, "email\nzoë@x.com\n", unicode.BigEndian, unicode.UseBOM), "email\nzoë@x.com\n", charset.UTF16},
		{"UTF16NoBOM", utf16(t, "email\nann@x.com\n", unicode.LittleEndian, unicode.IgnoreBOM), "email\nann@x.com\n", charset.UTF16},
		{"LongUTF8Line", long + "\n", long + "\n", charset.UTF8},
		{"LongLatin1Line", cp1252(t, strings.Repeat("é", charset.BufferSize+10)), strings.Repeat("é", charset.BufferSize+10), charset.Windows1252},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, enc := read(t, c.in)
			if got != c.want {
				t.Errorf("read %d bytes %.40q, want %d bytes %.40q", len(got), got, len(c.want), c.want)
			}
			if enc != c.enc {
				t.Errorf("encoding %s, want %s", enc, c.enc)
			}
		})
	}
}

// A Reader passes on its source's error.
func TestReaderError(t *testing.T) {
	_, err := io.ReadAll(charset.NewReader(iotest.ErrReader(io.ErrClosedPipe)))
	if err != io.ErrClosedPipe {
		t.Fatalf("error %v, want %v", err, io.ErrClosedPipe)
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("a@x.com\nb@x.com"))
	f.Add([]byte("Jos\xe9,jose@x.com\r\n"))
	f.Add([]byte("\xff\xfee\x00m\x00\n\x00"))
	f.Add([]byte("\xef\xbb\xbfa\xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := io.ReadAll(charset.NewReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(out) {
			t.Fatalf("%q read as %q, not UTF-8", in, out)
		}
		// Valid UTF-8 without a byte order mark is read as it is, unless
		// it looks like UTF-16.
		if utf8.Valid(in) && !bytes.HasPrefix(in, []byte("\xef\xbb\xbf")) && !bytes.Contains(in, []byte{0}) && !bytes.Equal(in, out) {
			t.Fatalf("UTF-8 %q read as %q", in, out)
		}
	})
}

func ExampleReader() {
	// "José" as Excel's "CSV (Comma delimited)" saves it.
	r := charset.NewReader(strings.NewReader("name,email\nJos\xe9,jose@example.org\n"))
	text, _ := io.ReadAll(r)
	fmt.Printf("%s%s\n", text, r.Encoding())
	// Output:
	// name,email
	// José,jose@example.org
	// Windows-1252
}

// A line from a pipe is read as soon as it is whole, before the writer
// sends more or closes.
func TestReaderPipe(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("a@x.com\nb@x."))
	r := charset.NewReader(pr)
	got := make([]byte, 64)
	n, err := r.Read(got)
	if err != nil || string(got[:n]) != "a@x.com\n" {
		t.Fatalf("read %q, %v; want the first line", got[:n], err)
	}
}
