package emailcheck

import (
	"context"
	"net/netip"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

// MailboxProber asks a domain's mail servers whether a mailbox exists, over
// SMTP or by any other means (a remote probing fleet with a clean IP
// reputation, for example). Package emailcheck/smtpprobe is one. A
// [Validator] calls it only for addresses that DNS judged LIKELY: never
// for invalid, disposable or mail-less domains. It may be called
// concurrently and must honor ctx; it reports what it could not decide as
// [MailboxUnknown], never as an error.
type MailboxProber interface {
	ProbeMailbox(ctx context.Context, req ProbeRequest) SMTPResult
}

// ProbeRequest is one mailbox to probe.
type ProbeRequest struct {
	// Address is the address as RCPT TO carries it: the local part as
	// typed and the domain in A-label form.
	Address string
	// Domain is the domain in lower-case A-label form.
	Domain string
	// UTF8 reports a non-ASCII local part, which needs a server that
	// offers SMTPUTF8.
	UTF8 bool
	// MXHosts are the domain's usable MX hosts, most preferred first.
	MXHosts []string
	// LookupHost returns the addresses mail to an MX host may go to,
	// from the validator's own cached DNS (which may know names the
	// system resolver does not); only public addresses unless
	// [Config.AllowPrivateMX] is set.
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

// MailboxState is what the receiving server said of a mailbox.
type MailboxState string

// Mailbox states.
const (
	// MailboxExists: the server accepted the recipient (250 or 251).
	MailboxExists MailboxState = "exists"
	// MailboxAbsent: the server refused the recipient as unknown (550,
	// 551 or 553 with enhanced code 5.1.1, 5.1.10, 5.2.1, or Microsoft
	// 365's 5.4.1).
	MailboxAbsent MailboxState = "absent"
	// MailboxUnknown: the server did not say: greylisting, throttling, a
	// full mailbox, a policy block, a refused sender, a timeout or a
	// reset. Never a bad mailbox.
	MailboxUnknown MailboxState = "unknown"
)

// SMTPResult is the outcome of a mailbox probe, the "smtp" object of a
// result. It is present only when the validator has a [MailboxProber].
type SMTPResult struct {
	// Checked reports whether a server was asked about the mailbox.
	Checked bool `json:"checked"`
	// Mailbox is the server's answer.
	Mailbox MailboxState `json:"mailbox"`
	// CatchAll reports whether the domain accepts any address (a random
	// one was accepted too); nil when not known.
	CatchAll *bool `json:"catch_all"`
	// Code is the SMTP reply code that decided, if any.
	Code *int `json:"code"`
	// EnhancedCode is the enhanced status code of that reply (RFC 3463),
	// such as "5.1.1", if any.
	EnhancedCode *string `json:"enhanced_code"`
	// Detail says in words what happened.
	Detail string `json:"detail"`
}

// lookupHostAddrs returns the addresses of an MX host that mail may go to,
// from the host cache.
func (v *Validator) lookupHostAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	h, _ := v.hostInfo(ctx, host)
	if !h.usable(v.cfg.AllowPrivateMX) {
		return nil, nil
	}
	if v.cfg.AllowPrivateMX {
		return h.addrs, nil
	}
	var out []netip.Addr
	for _, a := range h.addrs {
		if netpolicy.IsPublic(a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// probe asks the prober about the address res describes, and turns its
// answer into the result's status and score.
func (v *Validator) probe(ctx context.Context, addr Address, info *domainInfo, res *Result, ev evidence, o *callOptions) {
	r := SMTPResult{Mailbox: MailboxUnknown}
	switch {
	case res.Confidence.Status != StatusLikely:
		r.Detail = "not probed: the address is " + string(res.Confidence.Status)
	case info.outcome != outcomeMX:
		r.Detail = "not probed: the domain has no MX host"
	case o.noProbe:
		r.Detail = "not probed: mailbox probes are off for this request"
	case v.cfg.ProbeBudget != nil && !v.cfg.ProbeBudget(ctx, o.account):
		r.Detail = "not probed: the account's probe budget is spent"
	default:
		r = v.cfg.Prober.ProbeMailbox(ctx, ProbeRequest{
			Address:    addr.Local + "@" + addr.ASCIIDomain,
			Domain:     addr.ASCIIDomain,
			UTF8:       !asciiOnly(addr.Local),
			MXHosts:    info.mxHosts,
			LookupHost: v.lookupHostAddrs,
		})
		if r.Mailbox == "" {
			r.Mailbox = MailboxUnknown
		}
	}
	res.SMTP = &r
	switch {
	case r.Mailbox == MailboxAbsent:
		res.Confidence.Status, res.Reason = StatusUndeliverable, ReasonMailboxRejected
	case r.Mailbox == MailboxExists && r.CatchAll != nil && *r.CatchAll:
		res.Confidence.Status, res.Reason = StatusCatchAll, ReasonCatchAll
	case r.Mailbox == MailboxExists && r.CatchAll != nil:
		res.Confidence.Status, res.Reason = StatusDeliverable, ReasonMailboxAccepted
	default:
		// Undecided: the DNS verdict stands, with the reason a server
		// that put the probe off gave.
		if r.Checked && r.Code != nil && *r.Code >= 400 && *r.Code < 500 && res.Confidence.Status == StatusLikely {
			res.Reason = ReasonGreylisted
		}
		return
	}
	res.Confidence.Score = score(res.Confidence.Status, ev)
}

func asciiOnly(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
