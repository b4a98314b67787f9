package lists_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xuri/excelize/v2"

	"github.com/validmail/validmail/jobs/lists"
)

// workbook returns an .xlsx file of sheets, each a name and its rows.
func workbook(t testing.TB, sheets ...any) []byte {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	for i := 0; i < len(sheets); i += 2 {
		name, rows := sheets[i].(string), sheets[i+1].([][]any)
		if i == 0 {
			f.SetSheetName("Sheet1", name)
		} else if _, err := f.NewSheet(name); err != nil {
			t.Fatal(err)
		}
		for r, row := range rows {
			if err := f.SetSheetRow(name, fmt.Sprintf("A%d", r+1), &row); err != nil {
				t.Fatal(err)
			}
		}
	}
	var b bytes.Buffer
	if _, err := f.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadXLSX(t *testing.T) {
	book := workbook(t,
		"Notes", [][]any{{"just a note"}},
		"People", [][]any{{"Name", "E-mail", "Joined"}, {"Zoë", " Zoe@Example.org ", 2026}, {}, {"Ann", "not an address", nil}, {"Bob", "bob@example.org"}},
	)
	for _, tc := range []struct {
		name, sheet string
		header      []string
		rows        [][]string
		err         error
	}{
		{"named sheet", "people", []string{"Name", "E-mail", "Joined"}, [][]string{{"Zoë", " Zoe@Example.org ", "2026"}, {"Ann", "not an address"}, {"Bob", "bob@example.org"}}, nil},
		{"numbered sheet", "2", []string{"Name", "E-mail", "Joined"}, nil, nil},
		{"first sheet has no addresses", "", nil, nil, lists.ErrNoColumn},
		{"no such sheet", "Orders", nil, nil, lists.ErrBadWorkbook},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, err := lists.ReadXLSX(t.Context(), bytes.NewReader(book), &lists.Options{Sheet: tc.sheet})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer sp.Close()
			if !slices.Equal(sp.Header, tc.header) || sp.Column != 1 || sp.Rows != 3 || sp.Addresses != 2 || sp.Encoding != "xlsx" {
				t.Fatalf("header %q, column %d, %d rows, %d addresses, %q", sp.Header, sp.Column, sp.Rows, sp.Addresses, sp.Encoding)
			}
			if tc.rows == nil {
				return
			}
			rows := readAll(t, sp)
			for i, r := range rows {
				if !slices.Equal(r.Record, tc.rows[i]) {
					t.Fatalf("row %d: %q, want %q", i, r.Record, tc.rows[i])
				}
			}
			if rows[0].Key != "zoe@example.org" {
				t.Fatalf("key %q", rows[0].Key)
			}
		})
	}
}

func TestReadXLSXRefuses(t *testing.T) {
	wide := workbook(t, "S", [][]any{{"email", "a", "b", "c"}, {"x@example.org"}})
	for _, tc := range []struct {
		name string
		in   []byte
		opts lists.Options
		want error
	}{
		{"not a workbook", []byte("email\nx@example.org\n"), lists.Options{}, lists.ErrBadWorkbook},
		{"too large", wide, lists.Options{MaxBytes: 100}, lists.ErrTooLarge},
		{"too many columns", wide, lists.Options{MaxColumns: 3}, lists.ErrTooManyColumns},
		{"too many rows", workbook(t, "S", [][]any{{"email"}, {"a@example.org"}, {"b@example.org"}}), lists.Options{MaxRows: 1}, lists.ErrTooManyRows},
	} {
		sp, err := lists.ReadXLSX(t.Context(), bytes.NewReader(tc.in), &tc.opts)
		if err == nil {
			sp.Close()
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func FuzzReadXLSX(f *testing.F) {
	f.Add(workbook(f, "S", [][]any{{"email"}, {"a@example.org"}}))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, in []byte) {
		sp, err := lists.ReadXLSX(t.Context(), bytes.NewReader(in), &lists.Options{MaxBytes: 1 << 20})
		if err != nil {
			return
		}
		defer sp.Close()
		for _, r := range readAll(t, sp) {
			for _, c := range r.Record {
				if strings.ContainsRune(c, 0) {
					t.Fatalf("a cell holds NUL: %q", c)
				}
			}
		}
	})
}
