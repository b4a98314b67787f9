package emailcheck

import "errors"

// ErrSyntax is matched (with errors.Is) by every error ParseAddress returns.
var ErrSyntax = errors.New("emailcheck: invalid syntax")

// SyntaxOptions selects the optional syntax of ParseAddress. The zero value
// is the default deliverability profile.
type SyntaxOptions struct {
	AllowQuotedLocal    bool
	AllowAddressLiteral bool
	ASCIILocalOnly      bool
}

// Address is a parsed mailbox.
type Address struct {
	// Local is the local part as written.
	Local string
	// Domain is the domain as written (possibly Unicode), or the address
	// literal including its brackets.
	Domain string
	// ASCIIDomain is the lower-case A-label form of Domain used for DNS, or
	// the literal including its brackets.
	ASCIIDomain string
	// IsLiteral reports an address literal.
	IsLiteral bool
}

// ParseAddress parses s as a mailbox under the deliverability profile.
func ParseAddress(s string, opts SyntaxOptions) (Address, error) {
	return Address{}, ErrSyntax // replaced by the real parser
}
