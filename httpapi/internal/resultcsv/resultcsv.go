// Package resultcsv writes a batch's results as CSV, the one format of
// GET /api/v1/batches/{batch_id}/results?format=csv and of the console's
// results.csv download.
package resultcsv

import (
	"slices"
	"strconv"
	"strings"

	"github.com/validmail/validmail/jobs"
)

// columns are the columns of the CSV export: the address, then those
// examples/bulk appends, reason and did_you_mean last.
var columns = []string{"job_id", "email", "state", "status", "score", "syntax", "domain_exists", "mx_records",
	"disposable", "role", "alias", "canonical", "provider", "reason", "did_you_mean"}

// Header returns the CSV's header row.
func Header() []string { return slices.Clone(columns) }

// Record returns a job's row; cells that a spreadsheet would run as a
// formula are escaped.
func Record(j jobs.Job) []string {
	rec := []string{j.ID, Cell(j.Email), string(j.State)}
	if j.Result == nil {
		return append(rec, "", "", "", "", "", "", "", "", "", "", "", "")
	}
	res := j.Result
	cf, v := res.Confidence, res.Validations
	canonical, suggestion := "", ""
	if cf.CanonicalEmail != nil {
		canonical = *cf.CanonicalEmail
	}
	if res.DidYouMean != nil {
		suggestion = *res.DidYouMean
	}
	return append(rec, string(cf.Status), strconv.Itoa(cf.Score),
		strconv.FormatBool(v.Syntax), strconv.FormatBool(v.DomainExists),
		strconv.FormatBool(v.MXRecords), strconv.FormatBool(v.IsDisposable),
		strconv.FormatBool(cf.IsRoleBased), string(cf.AliasStatus), Cell(canonical), Cell(res.Provider.Name),
		Cell(string(res.Reason)), Cell(suggestion))
}

// Cell escapes a value that starts with =, +, -, @, a tab or a carriage
// return, which spreadsheets run as a formula, with a leading apostrophe.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
