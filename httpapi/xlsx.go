package httpapi

import (
	"io"

	"github.com/xuri/excelize/v2"
)

// XLSXContentType is the media type of an .xlsx workbook.
const XLSXContentType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

// maxXLSXCell is the most characters a spreadsheet cell holds.
const maxXLSXCell = 32767

// SheetWriter writes an export's records as the first sheet of an .xlsx
// workbook, a row at a time: rows past a few megabytes wait in a
// temporary file, so memory stays bounded whatever the export's length.
// Every cell is text. Call [SheetWriter.WriteTo] once the rows are
// written, and Close in any case.
type SheetWriter struct {
	f    *excelize.File
	sw   *excelize.StreamWriter
	row  int
	vals []any
}

// NewSheetWriter returns a SheetWriter whose sheet is named sheet.
func NewSheetWriter(sheet string) (*SheetWriter, error) {
	f := excelize.NewFile()
	if sheet != "Sheet1" {
		if err := f.SetSheetName("Sheet1", sheet); err != nil {
			f.Close()
			return nil, err
		}
	}
	sw, err := f.NewStreamWriter(sheet)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &SheetWriter{f: f, sw: sw}, nil
}

// Write implements [RecordWriter].
func (s *SheetWriter) Write(rec []string) error {
	s.row++
	cell, err := excelize.CoordinatesToCellName(1, s.row)
	if err != nil {
		return err
	}
	s.vals = s.vals[:0]
	for _, v := range rec {
		if len(v) > maxXLSXCell {
			r := []rune(v)
			if len(r) > maxXLSXCell {
				v = string(r[:maxXLSXCell])
			}
		}
		s.vals = append(s.vals, v)
	}
	return s.sw.SetRow(cell, s.vals)
}

// WriteTo writes the workbook to w.
func (s *SheetWriter) WriteTo(w io.Writer) (int64, error) {
	if err := s.sw.Flush(); err != nil {
		return 0, err
	}
	return s.f.WriteTo(w)
}

// Close removes the workbook's temporary files.
func (s *SheetWriter) Close() error { return s.f.Close() }
