package emailcheck

// evidence is what lowers a score below its status's base.
type evidence struct {
	role       bool // role mailbox (admin@, info@)
	aliasGuess bool // a "+tag" on a provider whose rule is unknown
	implicitMX bool // mail accepted through an A/AAAA record, not an MX
	nullMX     bool // the domain says it takes no mail
}

// Score bases and penalties; the package documentation has the table.
const (
	scoreDeliverable   = 100
	scoreUndeliverable = 5
	penaltyCatchAll    = 10
	scoreLikely        = 90
	scoreLikelyFloor   = 50
	scoreUnknown       = 40
	scoreDisposable    = 20
	scoreNoMX          = 10
	scoreNullMX        = 5
	scoreInvalidDomain = 5

	penaltyRole       = 15
	penaltyImplicitMX = 25
	penaltyAliasGuess = 5
)

// score returns the confidence score for a status and the evidence beside
// it. It is deterministic; LIKELY scores 50 to 90, every other status below
// 50, and evidence only ever lowers a score.
func score(status Status, ev evidence) int {
	base, floor := 0, 0
	switch status {
	case StatusDeliverable:
		return scoreDeliverable
	case StatusCatchAll:
		// Acceptance proves nothing: no more than the DNS verdict.
		base, floor = scoreLikely-penaltyCatchAll, scoreLikelyFloor
	case StatusUndeliverable:
		return scoreUndeliverable
	case StatusLikely:
		base, floor = scoreLikely, scoreLikelyFloor
	case StatusUnknown:
		base = scoreUnknown
	case StatusDisposable:
		base = scoreDisposable
	case StatusNoMXRecords:
		base = scoreNoMX
		if ev.nullMX {
			base = scoreNullMX
		}
	case StatusInvalidDomain:
		base = scoreInvalidDomain
	default: // INVALID_FORMAT, INVALID
		return 0
	}
	s := base
	if ev.role {
		s -= penaltyRole
	}
	if ev.implicitMX {
		s -= penaltyImplicitMX
	}
	if ev.aliasGuess {
		s -= penaltyAliasGuess
	}
	return max(s, floor)
}
