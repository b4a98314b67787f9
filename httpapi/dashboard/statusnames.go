package dashboard

import "github.com/validmail/validmail/emailcheck"

// statusNames are the console's words for each status; the code is shown
// beside them.
var statusNames = map[emailcheck.Status]string{
	emailcheck.StatusDeliverable:   "Deliverable",
	emailcheck.StatusLikely:        "Likely deliverable",
	emailcheck.StatusCatchAll:      "Accepts any address",
	emailcheck.StatusUnknown:       "Could not be checked",
	emailcheck.StatusDisposable:    "Disposable",
	emailcheck.StatusNoMXRecords:   "Domain takes no mail",
	emailcheck.StatusInvalidDomain: "Domain does not exist",
	emailcheck.StatusInvalid:       "Reserved or blocked domain",
	emailcheck.StatusInvalidFormat: "Not an address",
	emailcheck.StatusUndeliverable: "Mailbox does not exist",
}

// statusName names a status for people: its words, or the code itself
// for a status the console does not know yet.
func statusName(code string) string {
	if n, ok := statusNames[emailcheck.Status(code)]; ok {
		return n
	}
	return code
}
