package lists

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// ErrBadWorkbook: an .xlsx file that cannot be read (not a workbook, an
// encrypted one, a part larger than a list may be), or a sheet it does
// not have.
var ErrBadWorkbook = errors.New("lists: not a readable .xlsx workbook")

// maxWorkbookPart bounds a workbook part other than its sheets and shared
// strings (styles, themes, ...), which are read whole into memory.
const maxWorkbookPart = 8 << 20

// xlsxChunk is what a sheet or the shared strings may take of memory
// before they are read from a temporary file.
const xlsxChunk = 1 << 20

// ReadXLSX reads a list from an .xlsx workbook: its first sheet, or the
// one [Options.Sheet] names, a row a record, within the options' bounds
// (Options.Text is ignored), as [Read] reads a CSV file. The workbook is
// copied to a temporary file (at most [Options.MaxBytes]) and its sheet
// read from there a row at a time, so that memory stays bounded whatever
// its size.
func ReadXLSX(ctx context.Context, r io.Reader, o *Options) (*Spool, error) {
	opts := o.withDefaults()
	opts.Text = false
	tmp, err := os.CreateTemp(opts.TempDir, "validmail-xlsx-*")
	if err != nil {
		return nil, fmt.Errorf("lists: spool: %w", err)
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	n, err := io.Copy(tmp, &limitReader{r: r, left: opts.MaxBytes})
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, &ParseError{Err: ErrTooLarge}
		}
		return nil, &ParseError{Err: err}
	}
	if err := checkWorkbook(tmp, n, opts); err != nil {
		return nil, &ParseError{Err: err}
	}
	f, err := excelize.OpenFile(tmp.Name(), excelize.Options{
		UnzipSizeLimit: 4 * opts.MaxBytes, UnzipXMLSizeLimit: xlsxChunk, TmpDir: opts.TempDir,
	})
	if err != nil {
		return nil, &ParseError{Err: fmt.Errorf("%w: %v", ErrBadWorkbook, err)}
	}
	defer f.Close()
	sheet, err := pickSheet(f.GetSheetList(), opts.Sheet)
	if err != nil {
		return nil, &ParseError{Err: err}
	}
	rows, err := f.Rows(sheet)
	if err != nil {
		return nil, &ParseError{Err: fmt.Errorf("%w: %v", ErrBadWorkbook, err)}
	}
	defer rows.Close()
	return readRecords(ctx, &sheetRows{rows: rows, opts: opts}, opts)
}

// checkWorkbook refuses a workbook whose parts, by their zip headers,
// would take more than the list's bounds: parts read into memory past
// maxWorkbookPart, all of them past four times MaxBytes.
func checkWorkbook(f *os.File, size int64, opts Options) error {
	zr, err := zip.NewReader(f, size)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadWorkbook, err)
	}
	var total uint64
	for _, zf := range zr.File {
		total += zf.UncompressedSize64
		name := strings.ToLower(zf.Name)
		big := strings.HasPrefix(name, "xl/worksheets/") || name == "xl/sharedstrings.xml"
		if !big && zf.UncompressedSize64 > maxWorkbookPart || total > uint64(4*opts.MaxBytes) {
			return fmt.Errorf("%w: the part %s is too large", ErrTooLarge, zf.Name)
		}
	}
	return nil
}

// pickSheet returns the sheet named (any case) or numbered (from 1) by
// want; the first when want is empty.
func pickSheet(sheets []string, want string) (string, error) {
	if len(sheets) == 0 {
		return "", fmt.Errorf("%w: no sheet", ErrBadWorkbook)
	}
	if want == "" {
		return sheets[0], nil
	}
	for _, s := range sheets {
		if strings.EqualFold(strings.TrimSpace(s), strings.TrimSpace(want)) {
			return s, nil
		}
	}
	if i, err := strconv.Atoi(strings.TrimSpace(want)); err == nil && i >= 1 && i <= len(sheets) {
		return sheets[i-1], nil
	}
	return "", fmt.Errorf("%w: no sheet %q (it has %s)", ErrBadWorkbook, want, strings.Join(sheets, ", "))
}

// sheetRows reads a sheet's rows as records, skipping empty rows.
type sheetRows struct {
	rows *excelize.Rows
	opts Options
	row  int
}

func (s *sheetRows) lineNo() int      { return s.row }
func (s *sheetRows) encoding() string { return "xlsx" }

func (s *sheetRows) next() ([]string, error) {
	for s.rows.Next() {
		s.row++
		cols, err := s.rows.Columns()
		if err != nil {
			return nil, &ParseError{Line: s.row, Err: fmt.Errorf("%w: %v", ErrBadWorkbook, err)}
		}
		// Trailing empty cells are no columns.
		for len(cols) > 0 && cols[len(cols)-1] == "" {
			cols = cols[:len(cols)-1]
		}
		if len(cols) == 0 {
			continue
		}
		if len(cols) > s.opts.MaxColumns {
			return nil, &ParseError{Line: s.row, Err: ErrTooManyColumns}
		}
		size := 0
		for i, c := range cols {
			size += len(c) + 1
			if strings.IndexByte(c, 0) >= 0 {
				return nil, &ParseError{Line: s.row, Err: ErrNUL}
			}
			cols[i] = strings.ToValidUTF8(c, "\uFFFD")
		}
		if size > s.opts.MaxLineBytes {
			return nil, &ParseError{Line: s.row, Err: ErrLineTooLong}
		}
		return cols, nil
	}
	if err := s.rows.Error(); err != nil {
		return nil, &ParseError{Line: s.row, Err: fmt.Errorf("%w: %v", ErrBadWorkbook, err)}
	}
	return nil, io.EOF
}
