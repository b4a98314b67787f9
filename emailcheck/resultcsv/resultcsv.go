// Package resultcsv is the one way a validation [emailcheck.Result] is
// written as CSV: the columns every CSV of results carries after its own
// (a batch's export, a list's export, the console's downloads, the bulk
// command's output), under one vocabulary, that of the JSON result where
// it has one:
//
//	status, score, reason, did_you_mean, is_disposable, is_role_based,
//	is_free, provider, domain_exists, mx_records, alias, canonical
//
// status, score, reason and did_you_mean are the result's; is_disposable,
// domain_exists and mx_records its validations'; is_role_based its
// confidence's; is_free and provider its provider's is_free and name;
// alias and canonical its confidence's alias_status and canonical_email.
// (syntax is left out: it is false exactly when status is
// INVALID_FORMAT.) Text a spreadsheet would run as a formula is escaped
// ([Cell]).
package resultcsv

import (
	"slices"
	"strconv"
	"strings"

	"github.com/validmail/validmail/emailcheck"
)

// columns are the result's columns, in order.
var columns = []string{"status", "score", "reason", "did_you_mean", "is_disposable", "is_role_based",
	"is_free", "provider", "domain_exists", "mx_records", "alias", "canonical"}

// Columns returns the names of the result's columns, in order.
func Columns() []string { return slices.Clone(columns) }

// Width is the number of the result's columns.
const Width = 12

// Append appends res's cells to rec. A nil res (a job not yet done)
// appends empty cells.
func Append(rec []string, res *emailcheck.Result) []string {
	if res == nil {
		return append(rec, make([]string, Width)...)
	}
	cf, v := res.Confidence, res.Validations
	canonical, suggestion := "", ""
	if cf.CanonicalEmail != nil {
		canonical = *cf.CanonicalEmail
	}
	if res.DidYouMean != nil {
		suggestion = *res.DidYouMean
	}
	return append(rec, string(cf.Status), strconv.Itoa(cf.Score), Cell(string(res.Reason)), Cell(suggestion),
		strconv.FormatBool(v.IsDisposable), strconv.FormatBool(cf.IsRoleBased), strconv.FormatBool(res.Provider.IsFree),
		Cell(res.Provider.Name), strconv.FormatBool(v.DomainExists), strconv.FormatBool(v.MXRecords),
		string(cf.AliasStatus), Cell(canonical))
}

// AppendNotAddress appends the cells of a row that holds no address (and
// was not validated): INVALID_FORMAT, score 0, invalid_syntax, every
// check false.
func AppendNotAddress(rec []string) []string {
	return append(rec, string(emailcheck.StatusInvalidFormat), "0", string(emailcheck.ReasonInvalidSyntax), "",
		"false", "false", "false", "", "false", "false", "", "")
}

// Header returns a header: first's names (escaped as cells are), then
// the result's columns, then last's. A result column whose name first
// already uses (any case, spaces around ignored) gets a "validmail_"
// prefix, so that every name is the customer's or the result's.
func Header(first []string, last ...string) []string {
	taken := make(map[string]bool, len(first))
	out := make([]string, 0, len(first)+Width+len(last))
	for _, h := range first {
		taken[strings.ToLower(strings.TrimSpace(h))] = true
		out = append(out, Cell(h))
	}
	for _, col := range append(Columns(), last...) {
		if taken[col] {
			col = "validmail_" + col
		}
		out = append(out, col)
	}
	return out
}

// Cell escapes a value that starts with =, +, -, @, a tab or a carriage
// return, which spreadsheets run as a formula, with a leading apostrophe.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
