package dashboard

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	xunicode "golang.org/x/text/encoding/unicode"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/internal/uploads"
)

func utf16(t *testing.T, s string, bigEndian bool) string {
	t.Helper()
	e := xunicode.LittleEndian
	if bigEndian {
		e = xunicode.BigEndian
	}
	b, err := xunicode.UTF16(e, xunicode.UseBOM).NewEncoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func latin1(t *testing.T, s string) string {
	t.Helper()
	b, err := charmap.Windows1252.NewEncoder().String(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestReadList(t *testing.T) {
	for _, c := range []struct {
		name     string
		in       string
		csv      bool
		want     string // addresses joined by ","
		skipped  string // "line:reason" joined by ","
		encoding string
	}{
		{"Text", "\ufeffa@x.com\r\n\n  b@x.com  \n", false, "a@x.com,b@x.com", "", "UTF-8"},
		{"CSVHeader", "name,E-mail\nJane,jane@x.com\nJoe,\"joe@x.com\"\n", true, "jane@x.com,joe@x.com", "", "UTF-8"},
		{"CSVNoHeader", "jane@x.com,Jane\njoe@x.com,Joe\n", true, "jane@x.com,joe@x.com", "", "UTF-8"},
		{"CSVBOMHeader", "\ufeffEmail,Name\njosé@x.com,José\n", true, "josé@x.com", "", "UTF-8"},
		{"Latin1CSV", latin1(t, "email,name\njosé@gmail.com,José Müller\nzoë@x.com,Zoë\n"), true, "josé@gmail.com,zoë@x.com", "", "Windows-1252"},
		{"Windows1252Text", latin1(t, "€uro@x.com\nnaïve@x.com\n"), false, "€uro@x.com,naïve@x.com", "", "Windows-1252"},
		{"UTF16LE", utf16(t, "email,name\r\njosé@x.com,José\r\n", false), true, "josé@x.com", "", "UTF-16"},
		{"UTF16BE", utf16(t, "a@x.com\nzoë@x.com\n", true), false, "a@x.com,zoë@x.com", "", "UTF-16"},
		{"ClassicMacText", "a@x.com\rb@x.com\r", false, "a@x.com,b@x.com", "", "UTF-8"},
		{"ClassicMacCSV", latin1(t, "Email,Name\rjosé@x.com,José\rzoë@x.com,Zoë\r"), true, "josé@x.com,zoë@x.com", "", "Windows-1252"},
		{"NULLine", "a@x.com\nb\x00@x.com\nc@x.com\n", false, "a@x.com,c@x.com", "2:holds a control character", "UTF-8"},
		{"NULInLatin1", "jos\xe9@x.com\n\x00\nc@x.com", false, "josé@x.com,c@x.com", "2:holds a control character", "Windows-1252"},
		{"BadUTF8AfterBOM", "\ufeffa@x.com\nb\xff@x.com\n", false, "a@x.com", "2:holds characters that are not text", "UTF-8"},
		{"UndefinedWindows1252", "a\x81@x.com\nb@x.com\n", false, "b@x.com", "1:holds characters that are not text", "Windows-1252"},
		{"Overlong", "a@x.com\n" + strings.Repeat("x", httpapi.MaxAddressBytes+1) + "\n", false, "a@x.com", fmt.Sprintf("2:longer than %d bytes", httpapi.MaxAddressBytes), "UTF-8"},
		{"CSVMissingCell", "name,email\nJane,jane@x.com\nJoe\n,\nAnn,\"\"\n", true, "jane@x.com", "3:no address in column 2,5:no address in column 2", "UTF-8"},
		{"CSVMultilineField", "email,note\n\"a@x.com\",\"two\nlines\"\nb\x01@x.com,x\n", true, "a@x.com", "4:holds a control character", "UTF-8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := readList(strings.NewReader(c.in), c.csv)
			if err != nil {
				t.Fatal(err)
			}
			var skipped []string
			for _, s := range got.Skipped {
				skipped = append(skipped, fmt.Sprintf("%d:%s", s.Line, s.Reason))
			}
			if g := strings.Join(got.Emails, ","); g != c.want {
				t.Errorf("addresses %q, want %q", g, c.want)
			}
			if g := strings.Join(skipped, ","); g != c.skipped || got.NSkipped != len(got.Skipped) {
				t.Errorf("skipped %q (%d), want %q", g, got.NSkipped, c.skipped)
			}
			if got.Encoding != c.encoding {
				t.Errorf("read as %s, want %s", got.Encoding, c.encoding)
			}
		})
	}
	if _, err := readList(strings.NewReader(strings.Repeat("a@x.com\n", maxList+1)), false); !errors.Is(err, errListTooLong) {
		t.Fatalf("a list over the limit: %v", err)
	}
	many, err := readList(strings.NewReader(strings.Repeat("\x00\n", 200)+"a@x.com"), false)
	if err != nil || many.NSkipped != 200 || len(many.Skipped) != maxSkippedShown || len(many.Emails) != 1 {
		t.Fatalf("200 bad lines: %d skipped, %d listed, %v", many.NSkipped, len(many.Skipped), err)
	}
}

func FuzzReadList(f *testing.F) {
	f.Add([]byte("a@x.com\nb@x.com"), false)
	f.Add([]byte("email,name\n\"a@x.com\",A\n"), true)
	f.Add([]byte("\ufeffE-Mail\n\"unterminated"), true)
	f.Add([]byte("\xff\xfee\x00m\x00a\x00i\x00l\x00\n\x00"), true)
	f.Add([]byte("jos\xe9@x.com\n\x00\n"), false)
	f.Fuzz(func(t *testing.T, in []byte, isCSV bool) {
		got, err := readList(strings.NewReader(string(in)), isCSV)
		if err != nil {
			return
		}
		if len(got.Emails) > maxList {
			t.Fatalf("%d addresses, more than %d", len(got.Emails), maxList)
		}
		for _, s := range got.Emails {
			if s == "" || s != strings.TrimSpace(s) || len(s) > httpapi.MaxAddressBytes {
				t.Fatalf("address %q is empty, untrimmed or too long", s)
			}
			if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) || strings.ContainsFunc(s, unicode.IsControl) {
				t.Fatalf("address %q is not text", s)
			}
		}
	})
}

// TestListSlots: the console reads httpapi.DefaultMaxListUploads lists
// at once by default (or its Config.MaxListUploads), two of them one
// account's at most: two busy accounts leave the rest to the others.
func TestListSlots(t *testing.T) {
	for _, c := range []struct{ config, want int }{{0, httpapi.DefaultMaxListUploads}, {6, 6}} {
		lt := newListTool(listToolConfig{slots: c.config, perNetwork: -1})
		for i := range c.want {
			account := strconv.Itoa(i / httpapi.MaxListUploadsPerAccount)
			if _, why := lt.slots.Take(account, "net"); why != uploads.Granted {
				t.Fatalf("config %d: slot %d of account %s refused: %v", c.config, i, account, why)
			}
		}
		if _, why := lt.slots.Take("another", "net"); why != uploads.InstanceBusy {
			t.Fatalf("config %d: a slot beyond %d: %v", c.config, c.want, why)
		}
	}
	if httpapi.DefaultMaxListUploads != 16 || httpapi.MaxListUploadsPerAccount != 2 {
		t.Fatalf("slots %d, %d per account", httpapi.DefaultMaxListUploads, httpapi.MaxListUploadsPerAccount)
	}
}

// The preview keeps a cell's first bytes, whole characters only.
func TestShortCell(t *testing.T) {
	long := strings.Repeat("é", previewCellBytes) // two bytes each
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"ann@example.org", "ann@example.org"},
		{long[:previewCellBytes], long[:previewCellBytes]},
		{long, long[:previewCellBytes] + "…"},
		{"x" + long, "x" + long[:previewCellBytes-2] + "…"},
	} {
		if got := shortCell(c.in); got != c.want || !utf8.ValidString(got) {
			t.Errorf("shortCell(%d bytes) = %d bytes, want %d", len(c.in), len(got), len(c.want))
		}
	}
}
