package dashboard

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs/lists/charset"
)

// maxList bounds the addresses one submission reads.
const maxList = 1000

// maxSkippedShown bounds the skipped lines a report lists one by one.
const maxSkippedShown = 50

// Why a list cannot be read.
var (
	errListTooLong = fmt.Errorf("dashboard: a list has at most %d addresses", maxList)
	errBadCSV      = errors.New("dashboard: the CSV file cannot be read")
)

// listMessage is what the bulk page says about a list that cannot be read.
func listMessage(err error) string {
	if errors.Is(err, errListTooLong) {
		return fmt.Sprintf("A list has at most %d addresses.", maxList)
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("The file could not be read as CSV: line %d has a quote out of place.", pe.StartLine)
	}
	return "The file could not be read as CSV."
}

// skippedLine is a line of a list that was not submitted, and why.
type skippedLine struct {
	Line   int
	Reason string
}

// list is what a pasted or uploaded list holds: its addresses, the lines
// left out, and the encoding the file was read in.
type list struct {
	Emails   []string
	Skipped  []skippedLine // at most maxSkippedShown
	NSkipped int           // all of them
	Encoding string        // "UTF-8", "UTF-16", "Windows-1252", "UTF-8 and Windows-1252"
}

func (l *list) skip(line int, reason string) {
	l.NSkipped++
	if len(l.Skipped) < maxSkippedShown {
		l.Skipped = append(l.Skipped, skippedLine{line, reason})
	}
}

// add keeps s, found on line, unless it is not an address one could mean;
// an empty s is no line at all.
func (l *list) add(line int, s string) error {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return nil
	case len(s) > httpapi.MaxAddressBytes:
		l.skip(line, fmt.Sprintf("longer than %d bytes", httpapi.MaxAddressBytes))
		return nil
	case strings.ContainsRune(s, utf8.RuneError):
		l.skip(line, "holds characters that are not text")
		return nil
	case strings.ContainsFunc(s, unicode.IsControl):
		l.skip(line, "holds a control character")
		return nil
	}
	if len(l.Emails) == maxList {
		return errListTooLong
	}
	l.Emails = append(l.Emails, s)
	return nil
}

// readList reads addresses, one per line, or from the email column of a
// CSV file (found by its header, else the first column), in the text's
// encoding (see package charset). Lines that cannot hold an address (control
// characters, text that could not be decoded, overlong lines, CSV rows
// without an email cell) are left out and reported; a list of more than
// maxList addresses, or a CSV file that cannot be parsed, is an error.
func readList(rd io.Reader, isCSV bool) (list, error) {
	dec := charset.NewReader(rd)
	b, err := io.ReadAll(dec)
	if err != nil {
		return list{}, err
	}
	return parseList(string(b), dec.Encoding(), isCSV)
}

// readPasted reads a list pasted in the form, one address per line. A
// browser sends it as UTF-8: a line that is not is left out.
func readPasted(s string) (list, error) {
	return parseList(strings.ToValidUTF8(strings.TrimPrefix(s, "\ufeff"), "\uFFFD"), "UTF-8", false)
}

// parseList reads the addresses of text, decoded from encName.
func parseList(text, encName string, isCSV bool) (list, error) {
	l := list{Encoding: encName}
	// Lines end in LF, CRLF, or a lone CR, as a spreadsheet's "CSV
	// (Macintosh)" export still writes them.
	text = strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n")
	if !isCSV {
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(nil, len(text)+1)
		for n := 1; sc.Scan(); n++ {
			if err := l.add(n, sc.Text()); err != nil {
				return list{}, err
			}
		}
		return l, sc.Err()
	}
	cr := csv.NewReader(strings.NewReader(text))
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	col, first := 0, true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return list{}, fmt.Errorf("%w: %w", errBadCSV, pe)
			}
			return list{}, errBadCSV
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			found := false
			for i, h := range rec {
				h = strings.ToLower(strings.TrimSpace(h))
				if h == "email" || h == "e-mail" || h == "email address" || h == "mail" {
					col, found = i, true
					break
				}
			}
			if found {
				continue
			}
		}
		if col >= len(rec) || strings.TrimSpace(rec[col]) == "" {
			if strings.TrimSpace(strings.Join(rec, "")) != "" {
				l.skip(line, "no address in column "+strconv.Itoa(col+1))
			}
			continue
		}
		if err := l.add(line, rec[col]); err != nil {
			return list{}, err
		}
	}
	return l, nil
}

// sessReport is the session key of the last submitted list's report.
const sessReport = "list_report"

// storedReport is a list's report as the session keeps it.
type storedReport struct {
	Batch    string        `json:"batch"`
	Encoding string        `json:"encoding"`
	Skipped  []skippedLine `json:"skipped"`
	N        int           `json:"n"`
}

// keepReport keeps what was left out of the list that became batch, for
// its page; a list without skipped lines clears the last report.
func (d *Dashboard) keepReport(ctx context.Context, batch string, l list) {
	if l.NSkipped == 0 && (l.Encoding == "" || l.Encoding == "UTF-8") {
		d.sessions.Remove(ctx, sessReport)
		return
	}
	b, err := json.Marshal(storedReport{Batch: batch, Encoding: l.Encoding, Skipped: l.Skipped, N: l.NSkipped})
	if err != nil {
		return
	}
	d.sessions.Put(ctx, sessReport, string(b))
}

// report returns what was left out of the list that became batch, when
// this session submitted it; nil otherwise.
func (d *Dashboard) report(ctx context.Context, batch string) *list {
	s := d.sessions.GetString(ctx, sessReport)
	if s == "" {
		return nil
	}
	var sr storedReport
	if json.Unmarshal([]byte(s), &sr) != nil || sr.Batch != batch {
		return nil
	}
	return &list{Skipped: sr.Skipped, NSkipped: sr.N, Encoding: sr.Encoding}
}
