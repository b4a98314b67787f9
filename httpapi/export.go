package httpapi

import (
	"context"
	"hash/maphash"
	"strconv"
	"strings"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
)

// ExportFilter selects the rows of a results export.
type ExportFilter struct {
	// Group keeps one group's rows; "" keeps every row.
	Group Group
	// Statuses keeps the rows of these statuses; nil keeps every row.
	Statuses []emailcheck.Status
	// Dedupe writes each address once (trimmed and case-folded, as a list
	// counts them): its first row the filter keeps, with a last column,
	// duplicates, counting the other rows of the address it keeps. Rows
	// that are not addresses are each written.
	Dedupe bool
	// NotAddresses keeps a list's rows that are not addresses alone (to
	// fix and upload again).
	NotAddresses bool
}

// DuplicatesColumn names the column a deduplicated export adds.
const DuplicatesColumn = "duplicates"

// RecordWriter takes an export's records one at a time: a *csv.Writer,
// or an .xlsx sheet's writer.
type RecordWriter interface {
	Write(record []string) error
}

// keepsListRow tells whether the filter keeps a list's row: a row
// without an address is to remove and INVALID_FORMAT; an address still
// being validated is in no group yet.
func (f ExportFilter) keepsListRow(row jobs.ListRow) bool {
	if f.NotAddresses {
		return row.Job == nil && row.Key == ""
	}
	if row.Job == nil {
		return (f.Group == "" || f.Group == GroupRemove) &&
			(f.Statuses == nil || containsStatus(f.Statuses, emailcheck.StatusInvalidFormat))
	}
	return f.Group.keepsJob(*row.Job) && keep(*row.Job, f.Statuses)
}

// dedupe counts the rows of each address, then tells the first of each.
// It holds 12 bytes and a map entry per address.
type dedupe struct {
	seed   maphash.Seed
	counts map[uint64]uint32
}

// emitted marks an address whose first row was written.
const emitted = 1 << 31

func newDedupe() *dedupe { return &dedupe{seed: maphash.MakeSeed(), counts: map[uint64]uint32{}} }

func (d *dedupe) count(key string) { d.counts[maphash.String(d.seed, key)]++ }

// first reports whether key's row is the first written, and how many
// other rows the address has.
func (d *dedupe) first(key string) (bool, int) {
	h := maphash.String(d.seed, key)
	n := d.counts[h]
	if n&emitted != 0 {
		return false, 0
	}
	d.counts[h] = n | emitted
	return true, int(max(n, 1) - 1)
}

// WriteList writes a list's export through the writer start returns: the
// header (the uploaded columns, the result's, state, and duplicates when
// deduplicated), then every row the filter keeps, in upload order. start
// is called once the first rows are read, just before the first record:
// an error before it is the caller's to answer; after it, the export is
// cut short and the error returned.
func WriteList(ctx context.Context, q *jobs.Queue, info jobs.ListInfo, f ExportFilter, start func() RecordWriter) error {
	rows := func(after int) ([]jobs.ListRow, error) {
		return q.ListRows(ctx, jobs.ListRowsParams{AccountID: info.AccountID, BatchID: info.BatchID, After: after, Limit: exportPage})
	}
	var dd *dedupe
	if f.Dedupe {
		dd = newDedupe()
		for page, err := rows(-1); ; page, err = rows(page[len(page)-1].N) {
			if err != nil {
				return err
			}
			for _, row := range page {
				if row.Job != nil && f.keepsListRow(row) {
					dd.count(row.Job.ID)
				}
			}
			if len(page) < exportPage {
				break
			}
		}
	}
	page, err := rows(-1)
	if err != nil {
		return err
	}
	w := start()
	header := ListCSVHeader(info.Header)
	if dd != nil {
		header = append(header, DuplicatesColumn)
	}
	if err := w.Write(header); err != nil {
		return err
	}
	width := len(info.Header)
	for len(page) > 0 {
		for _, row := range page {
			if !f.keepsListRow(row) {
				continue
			}
			if row.Email == "" && info.Column < len(row.Record) {
				row.Email = strings.TrimSpace(row.Record[info.Column])
			}
			rec := ListCSVRecord(width, row)
			if dd != nil {
				n := 0
				if row.Job != nil {
					var first bool
					if first, n = dd.first(row.Job.ID); !first {
						continue
					}
				}
				rec = append(rec, strconv.Itoa(n))
			}
			if err := w.Write(rec); err != nil {
				return err
			}
		}
		if len(page) < exportPage {
			break
		}
		if page, err = rows(page[len(page)-1].N); err != nil {
			return err
		}
	}
	return nil
}

// ownSuggestion returns res as a row whose address cell is email reads
// it: a did_you_mean that keeps the validated address's local part keeps
// the row's own (its case), as rows of one address share one result.
func ownSuggestion(res *emailcheck.Result, email string) *emailcheck.Result {
	if res == nil || res.DidYouMean == nil || email == "" || email == res.Email {
		return res
	}
	at, sat, rat := strings.LastIndexByte(res.Email, '@'), strings.LastIndexByte(*res.DidYouMean, '@'), strings.LastIndexByte(email, '@')
	if at < 0 || sat < 0 || rat < 0 || (*res.DidYouMean)[:sat] != res.Email[:at] || lists.Key(email[:rat]) != lists.Key(res.Email[:at]) {
		return res
	}
	own := *res
	s := email[:rat] + (*res.DidYouMean)[sat:]
	own.DidYouMean = &s
	return &own
}

// WriteBatch writes a batch's export through the writer start returns,
// as [WriteList] writes a list's: the header (job_id, email, the result's
// columns, state, and duplicates when deduplicated), then every job the
// filter keeps, in submission order.
func WriteBatch(ctx context.Context, q *jobs.Queue, accountID, batchID string, f ExportFilter, start func() RecordWriter) error {
	jobsAfter := func(after string) ([]jobs.Job, error) {
		return q.BatchJobs(ctx, jobs.BatchJobsParams{AccountID: accountID, BatchID: batchID, Limit: exportPage, After: after})
	}
	keeps := func(j jobs.Job) bool { return keep(j, f.Statuses) && f.Group.keepsJob(j) }
	var dd *dedupe
	if f.Dedupe {
		dd = newDedupe()
		for page, err := jobsAfter(""); ; page, err = jobsAfter(page[len(page)-1].ID) {
			if err != nil {
				return err
			}
			for _, j := range page {
				if keeps(j) {
					dd.count(lists.Key(j.Email))
				}
			}
			if len(page) < exportPage {
				break
			}
		}
	}
	page, err := jobsAfter("")
	if err != nil {
		return err
	}
	w := start()
	header := BatchCSVHeader()
	if dd != nil {
		header = append(header, DuplicatesColumn)
	}
	if err := w.Write(header); err != nil {
		return err
	}
	for len(page) > 0 {
		for _, j := range page {
			if !keeps(j) {
				continue
			}
			rec := BatchCSVRecord(j)
			if dd != nil {
				first, n := dd.first(lists.Key(j.Email))
				if !first {
					continue
				}
				rec = append(rec, strconv.Itoa(n))
			}
			if err := w.Write(rec); err != nil {
				return err
			}
		}
		if len(page) < exportPage {
			break
		}
		if page, err = jobsAfter(page[len(page)-1].ID); err != nil {
			return err
		}
	}
	return nil
}
