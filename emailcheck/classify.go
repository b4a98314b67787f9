package emailcheck

// aliasRule is how a provider treats sub-address tags.
type aliasRule uint8

const (
	aliasRuleUnknown  aliasRule = iota // provider's rule not known
	aliasRulePlus                      // "+tag" is ignored
	aliasRulePlusDots                  // "+tag" and dots are ignored (consumer Gmail)
	aliasRuleDash                      // "-tag" is ignored (Yahoo)
)

// domainClass is what the lists and provider rules say about a domain. It
// depends only on the domain and its MX hosts, so it is cached with them.
type domainClass struct {
	disposable bool
	provider   string
	rule       aliasRule
	equivalent []string // never nil; shared, callers copy before handing out
}

// classifier holds the embedded and configured lists. It is immutable after
// construction and safe for concurrent use.
type classifier struct{}

// newClassifier builds the classifier from the embedded lists plus the extra
// disposable domains and the allowlist from Config.
func newClassifier(extraDisposable, allow []string) (*classifier, error) {
	return &classifier{}, nil
}

// classifyDomain classifies a lower-case A-label domain given its usable MX
// hosts (lower-case, no trailing dot, most preferred first; nil when unknown).
func (c *classifier) classifyDomain(asciiDomain string, mxHosts []string) domainClass {
	return domainClass{provider: "Unknown", equivalent: []string{}}
}

// classifyLocal classifies a local part under the domain's class: whether it
// is a role mailbox, its alias status, and the canonical address ("" when no
// alias is detected).
func (c *classifier) classifyLocal(local, asciiDomain string, dc domainClass) (role bool, alias AliasStatus, canonical string) {
	return false, AliasMaybeNot, ""
}
