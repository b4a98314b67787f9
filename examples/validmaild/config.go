package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/billing/stripecheckout"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/plans"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
	"github.com/validmail/validmail/webhook"
)

// defaultListMaxDuration is the default of -list-max-duration, the
// API's default ListMaxDuration.
const defaultListMaxDuration = 30 * time.Minute

// defaultStoreWait is the default of -store-wait.
const defaultStoreWait = time.Minute

// envPrefix starts the environment variable of every flag.
const envPrefix = "VALIDMAIL_"

// errUsage reports a command line that could not be parsed; the flag
// package has already printed the reason.
var errUsage = errors.New("usage error")

// exitCode returns the process exit status for an error returned by run:
// 2 for a usage error, 1 otherwise.
func exitCode(err error) int {
	if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

// config is the service's configuration, from flags and environment.
type config struct {
	Addr  string
	Store string
	// StoreInit declares a Redis store new (-store-init): its marker key is
	// written when missing. Without it a Redis store without a marker is
	// refused as one whose server lost its data.
	StoreInit bool
	// SkipMigrate opens the store without migrating it (-skip-migrate):
	// a store that needs migrating fails the start.
	SkipMigrate bool
	// StoreWait is how long the start waits for a store that does not
	// answer (-store-wait).
	StoreWait      time.Duration
	DNS            []string
	Workers        int
	BootstrapEmail string
	BootstrapKey   string
	// BootstrapCredits is the grant of an account this process creates
	// at start; 0 means store.DefaultSignupCredits.
	BootstrapCredits int64
	LogLevel         slog.Level
	Metrics          bool
	// MetricsAddr is the address /metrics is served on, apart from the
	// API's listener (-metrics-addr).
	MetricsAddr string
	// ClientIPHeader names the header a trusted reverse proxy puts the
	// client's address in (-client-ip-header); empty means the peer's
	// address.
	ClientIPHeader string
	// WebhookAllow lists the CIDR prefixes, addresses and host names
	// webhook deliveries may reach besides public addresses.
	WebhookAllow []string
	// AllowPrivateMX accepts MX hosts with private or loopback addresses
	// only (-allow-private-mx), and lets the SMTP probe dial them.
	AllowPrivateMX bool
	// ReadinessNeedsDNS makes /readyz fail while the DNS does not answer
	// or cannot be believed (-ready-needs-dns).
	ReadinessNeedsDNS bool
	// SMTPProbe turns mailbox probing on (-smtp-probe), configured by
	// SMTP (-smtp-helo, -smtp-from, -smtp-port, -smtp-timeout).
	SMTPProbe bool
	SMTP      smtpprobe.Config
	// RateLimit is the per-key request limit; its zero value means the
	// API's defaults.
	RateLimit ratelimit.Limit
	// ListUploads, ListUploadsPerNetwork, ListHealthyRate (bytes a
	// second) and ListMaxDuration bound the list uploads of the API and
	// the console (-list-uploads, …); ListWait is how long a console list
	// waits for its confirmation (-list-wait). Zero means the defaults.
	ListUploads           int
	ListUploadsPerNetwork int
	ListHealthyRate       int64
	ListMaxDuration       time.Duration
	ListWait              time.Duration
	// Dashboard serves the console at /dashboard/ and the demo at /demo
	// (-dashboard); DashboardInsecureCookies drops the session cookie's
	// Secure attribute for plain-HTTP development on loopback.
	Dashboard                bool
	DashboardInsecureCookies bool
	// PprofAddr, when set, serves net/http/pprof there (-pprof).
	PprofAddr string
	// Relay, when Relay.Addr is set (-smtp-relay), sends the console's
	// mail (-mail-from, -smtp-relay-user, -smtp-relay-password); PublicURL
	// is the console's origin for the links in it (-public-url).
	Relay     mail.RelayConfig
	PublicURL string
	// AdminToken, when set, serves the operator's API under
	// /api/v1/admin/ to bearers of it (-admin-token).
	AdminToken string
	// BillingURL is where the console's "Get credits" link leads
	// (-billing-url); empty shows no link.
	BillingURL string
	// DisposableList is a file or http(s) URL of the operator's own
	// disposable domains (-disposable-list), merged with the embedded
	// lists and checked for a change every DisposableListInterval
	// (-disposable-list-interval); empty means none.
	DisposableList         string
	DisposableListInterval time.Duration
	// Stripe, when its SecretKey is set (-stripe-secret-key), sells
	// Packs (-credit-packs) through Stripe Checkout: -stripe-webhook-secret
	// signs the events, -stripe-api-url is Stripe's API.
	Stripe stripecheckout.Config
	// Plans, read from the file -plans names, gives each account its
	// plan's limits; nil: every account has the deployment's.
	Plans *plans.Catalog
}

// envName returns the environment variable that sets the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// parseFlags parses args into fs after taking the default of every flag
// defined on fs from its environment variable, so that a flag given in args
// wins over the environment.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		v := getenv(envName(f.Name))
		if v == "" || err != nil {
			return
		}
		if e := fs.Set(f.Name, v); e != nil {
			err = fmt.Errorf("%w: %s=%q: %v", errUsage, envName(f.Name), v, e)
		}
	})
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil
}

// newFlagSet returns a flag set that reports to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseServeConfig reads the service's configuration from args and the
// environment.
func parseServeConfig(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	fs := newFlagSet("validmaild", stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  validmaild [flags]\n  validmaild account create|set-password|grant|show -email E -store URL …\n  validmaild key create -email E -permissions P,P… -store URL\n  validmaild migrate -store URL [-store-init]\n  validmaild healthcheck [-addr A] [-path /readyz]\n\n"+
			"Each flag may also be set by the environment variable %s<NAME>, e.g. %s.\n\nFlags:\n", envPrefix, envName("store"))
		fs.PrintDefaults()
	}
	var (
		c         config
		dns       string
		logLevel  string
		allow     string
		packs     string
		planFile  string
		rateLimit float64
		rateBurst int
	)
	fs.StringVar(&c.Addr, "addr", ":8080", "listen `address` (host:port)")
	fs.StringVar(&c.Store, "store", "memory", "backend: memory, postgres://… (schema=NAME selects a schema), redis://… or redis+cluster://host:port,host:port/ (prefix=NAME selects a key prefix)")
	fs.BoolVar(&c.StoreInit, "store-init", false, "initialise a new Redis store: write its marker key when there is none. Give it at a new\ndeployment's first start only; without it, a Redis store with no marker fails the start as one whose\nserver lost its data (restore the data), so that an empty store is never served as the customers' one")
	fs.BoolVar(&c.SkipMigrate, "skip-migrate", false, "do not migrate the store at start (validmaild migrate does, as a step of its own): a PostgreSQL\nschema or Redis layout behind this release's, or a previous release's Redis store not yet adopted,\nfails the start")
	fs.DurationVar(&c.StoreWait, "store-wait", defaultStoreWait, "how long the start waits for a store that does not answer (a database starting beside the service),\ntrying again with a growing pause; 0 tries once")
	fs.StringVar(&dns, "dns", "", "comma-separated DNS `servers` (host:port); default those of /etc/resolv.conf")
	fs.IntVar(&c.Workers, "workers", jobs.DefaultWorkers, "batch validations run at once by this instance; 0 runs no workers here (the API and webhook delivery still run)")
	fs.StringVar(&c.BootstrapEmail, "bootstrap-email", "", "create an account with this `email` at start if it is missing")
	fs.StringVar(&c.BootstrapKey, "bootstrap-key", "", "create this API `key` (every permission) for -bootstrap-email if it is missing")
	fs.Int64Var(&c.BootstrapCredits, "bootstrap-credits", 0, fmt.Sprintf("`credits` granted to the -bootstrap-email (or demo) account when this process creates it; 0 means %d", store.DefaultSignupCredits))
	fs.StringVar(&logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&c.ReadinessNeedsDNS, "ready-needs-dns", false, "fail /readyz while no nameserver answers or the nameservers deny names that exist. By default the DNS's\nstate is a dns: line of /readyz's body and a metric: every instance shares the resolver, so failing readiness\nfor it would take every instance out of the load balancer at once")
	fs.BoolVar(&c.AllowPrivateMX, "allow-private-mx", false, "accept MX hosts whose addresses are all private or loopback, for intranets and tests (the SMTP probe\nmay then dial them); by default such a domain is NO_MX_RECORDS")
	fs.BoolVar(&c.SMTPProbe, "smtp-probe", false, "ask each LIKELY address's mail server over SMTP whether the mailbox exists (needs -smtp-helo and\n-smtp-from, and outbound port 25; read \"Mailbox verification over SMTP\" in the operator's guide, examples/validmaild/README.md, first)")
	fs.StringVar(&c.SMTP.HELO, "smtp-helo", "", "host `name` said in EHLO when probing: a name you own, ideally this host's reverse DNS")
	fs.StringVar(&c.SMTP.MailFrom, "smtp-from", "", "sender `address` of MAIL FROM when probing: an address you own")
	fs.IntVar(&c.SMTP.Port, "smtp-port", smtpprobe.DefaultPort, "SMTP `port` of the MX hosts")
	fs.DurationVar(&c.SMTP.Timeout, "smtp-timeout", smtpprobe.DefaultTimeout, "longest wait for one probe; GET /validate waits this long at most")
	fs.BoolVar(&c.Metrics, "metrics", false, "serve Prometheus metrics at /metrics on -metrics-addr (webhook delivery metrics included)")
	fs.StringVar(&c.ClientIPHeader, "client-ip-header", "", "`header` a trusted reverse proxy sets to the client's address (for example X-Forwarded-For, whose last\nvalue is used), for the limits per client address (failed authentications, sign-in, sign-up, demo); empty means the peer's address.\nSet it only behind a proxy that overwrites the header, or clients choose their own address")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "127.0.0.1:9090", "listen `address` of /metrics, apart from the API's: keep it off the public network")
	fs.StringVar(&allow, "webhook-allow", "", "comma-separated `list` of CIDR prefixes, IP addresses or host names that webhook deliveries may\nreach besides public addresses, e.g. 127.0.0.1 or 10.0.0.0/8 for receivers on a private network;\nempty means public addresses only")
	fs.Float64Var(&rateLimit, "rate-limit", 0, fmt.Sprintf("steady `rate` of requests per second allowed per API key; 0 means %d, a negative value turns\nrate limiting off. Instances on one Redis store share each key's limit", httpapi.DefaultRatePerSecond))
	fs.IntVar(&rateBurst, "rate-burst", 0, fmt.Sprintf("`requests` one API key may make at once; 0 means %d with the default rate, else one second's\nworth of -rate-limit", httpapi.DefaultRateBurst))
	fs.IntVar(&c.ListUploads, "list-uploads", httpapi.DefaultMaxListUploads, fmt.Sprintf("list `uploads` read at once by this instance, by the API and by the console each (%d an account at most);\nwhen all are taken, a new upload takes the slot of the slowest one below -list-healthy-rate", httpapi.MaxListUploadsPerAccount))
	fs.IntVar(&c.ListUploadsPerNetwork, "list-uploads-per-network", httpapi.DefaultMaxListUploadsPerNetwork, "list `uploads` one client network (IPv4 /24, IPv6 /64) may hold at once, every account's together; negative: no bound")
	fs.Int64Var(&c.ListHealthyRate, "list-healthy-rate", httpapi.DefaultListHealthyRate>>10, "average `KiB/s` at or above which a list upload never loses its slot to a newer one")
	fs.DurationVar(&c.ListMaxDuration, "list-max-duration", defaultListMaxDuration, "longest list upload; one still sending then is answered 408 (uploads slower than 1 MiB per 5 s are 408 earlier)")
	fs.DurationVar(&c.ListWait, "list-wait", dashboard.DefaultListWaitTTL, "how long a list uploaded on the console waits for its confirmation")
	fs.StringVar(&c.PprofAddr, "pprof", "", "serve net/http/pprof at /debug/pprof/ on this `address` (e.g. 127.0.0.1:6060), apart from the API; empty means off")
	fs.BoolVar(&c.Dashboard, "dashboard", true, "serve the customer's console at /dashboard/ and the public demo at /demo (and redirect / there)")
	fs.BoolVar(&c.DashboardInsecureCookies, "dashboard-insecure-cookies", false, "send the console's session cookie without Secure, for plain-HTTP development on loopback only;\nbehind TLS leave it off")
	fs.StringVar(&c.Relay.Addr, "smtp-relay", "", "SMTP relay (`host:port`) that sends the console's mail: sign-up confirmations (the free credits\narrive when the link is followed) and password resets. Empty: mail is written to the log and new\naccounts get their credits at once")
	fs.StringVar(&c.Relay.From, "mail-from", "", "sender `address` of the console's mail, e.g. \"validmail <no-reply@example.com>\"; required with -smtp-relay")
	fs.StringVar(&c.Relay.Username, "smtp-relay-user", "", "`user` name for AUTH PLAIN at the relay (sent over TLS only, or to a loopback relay)")
	fs.StringVar(&c.Relay.Password, "smtp-relay-password", "", "`password` for AUTH PLAIN at the relay; prefer its environment variable to the command line")
	fs.StringVar(&c.PublicURL, "public-url", "", "the console's public `origin`, e.g. https://validmail.example.com, for the links in mail; required with\n-smtp-relay")
	fs.StringVar(&c.AdminToken, "admin-token", "", fmt.Sprintf("serve the operator's API (/api/v1/admin/accounts/{email}, …/grants) to requests with\n\"Authorization: Bearer TOKEN\": at least %d characters; prefer the environment variable, which\nother users of the machine cannot list. Empty means the operator's API is not served", httpapi.MinAdminTokenBytes))
	fs.StringVar(&c.DisposableList, "disposable-list", "", "a `file or URL` (http:// or https://) of your own disposable domains, one a line, merged with the\nembedded lists and reloaded when it changes; a list that is malformed, empty, larger than 16 MiB or less\nthan half the one in use is refused and the one in use kept. Empty means the embedded lists only")
	fs.DurationVar(&c.DisposableListInterval, "disposable-list-interval", emailcheck.DefaultFeedInterval, "how often -disposable-list is checked for a change (a URL with a conditional request)")
	fs.StringVar(&c.BillingURL, "billing-url", "", "`URL` of your own checkout, linked from the console as \"Get credits\"; empty shows no link")
	fs.StringVar(&c.Stripe.SecretKey, "stripe-secret-key", "", "Stripe API `key` (sk_live_…, sk_test_… or a restricted key writing Checkout Sessions): sells -credit-packs\nthrough Stripe Checkout; needs -stripe-webhook-secret and -public-url. Prefer the environment variable")
	fs.StringVar(&c.Stripe.WebhookSecret, "stripe-webhook-secret", "", "signing `secret` (whsec_…) of the Stripe webhook endpoint at PUBLIC-URL/billing/stripe/webhook")
	fs.StringVar(&c.Stripe.APIURL, "stripe-api-url", stripecheckout.DefaultAPIURL, "Stripe's API `URL` (a stripe-mock server for tests)")
	fs.StringVar(&packs, "credit-packs", defaultPacks, "credit packs sold with -stripe-secret-key: comma-separated `CREDITS:PRICE:CURRENCY[:PLAN]`, the price in\nthe currency's smallest unit (cents); a PLAN (of -plans) puts the buyer on it")
	fs.StringVar(&planFile, "plans", "", "a JSON `file` of plans: each account's API rate, concurrent jobs, console allowance and SMTP probe\nbudget by its plan (validmaild account set-plan, PUT /api/v1/admin/accounts/{email}/plan)")
	if err := parseFlags(fs, args, getenv); err != nil {
		return c, err
	}
	var err error
	if c.Plans, err = readPlans(planFile); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return c, fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	if err := c.LogLevel.UnmarshalText([]byte(logLevel)); err != nil {
		return c, fmt.Errorf("%w: -log-level %q: want debug, info, warn or error", errUsage, logLevel)
	}
	for s := range strings.SplitSeq(dns, ",") {
		if s = strings.TrimSpace(s); s != "" {
			if !validNameserver(s) {
				return c, fmt.Errorf("%w: -dns %q: want host:port or an IP address", errUsage, s)
			}
			c.DNS = append(c.DNS, s)
		}
	}
	for s := range strings.SplitSeq(allow, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.WebhookAllow = append(c.WebhookAllow, s)
		}
	}
	if _, err := webhook.NewClient(webhook.ClientOptions{Allow: c.WebhookAllow}); err != nil {
		return c, fmt.Errorf("%w: -webhook-allow: %v", errUsage, err)
	}
	if c.SMTPProbe {
		if _, err := smtpprobe.New(c.SMTP); err != nil {
			return c, fmt.Errorf("%w: -smtp-probe needs -smtp-helo and -smtp-from naming a host and an address you own: %v", errUsage, err)
		}
	}
	if c.AdminToken != "" && (len(c.AdminToken) < httpapi.MinAdminTokenBytes || strings.ContainsFunc(c.AdminToken, func(r rune) bool { return r <= ' ' || r >= 0x7f })) {
		return c, fmt.Errorf("%w: -admin-token must be at least %d printable ASCII characters", errUsage, httpapi.MinAdminTokenBytes)
	}
	if c.BillingURL != "" {
		if u, err := url.Parse(c.BillingURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return c, fmt.Errorf("%w: -billing-url %q: want an http or https URL", errUsage, c.BillingURL)
		}
	}
	if c.ListUploads < 1 || c.ListHealthyRate < 1 || c.ListMaxDuration < time.Second || c.ListWait < time.Second || c.ListUploadsPerNetwork == 0 {
		return c, fmt.Errorf("%w: -list-uploads, -list-healthy-rate, -list-max-duration, -list-wait and -list-uploads-per-network must be positive (-list-uploads-per-network may be negative: no bound)", errUsage)
	}
	c.ListHealthyRate <<= 10
	if c.BootstrapCredits < 0 {
		return c, fmt.Errorf("%w: -bootstrap-credits must not be negative", errUsage)
	}
	switch {
	case math.IsNaN(rateLimit) || math.IsInf(rateLimit, 0):
		return c, fmt.Errorf("%w: -rate-limit must be a finite number", errUsage)
	case rateBurst < 0:
		return c, fmt.Errorf("%w: -rate-burst must not be negative", errUsage)
	case rateLimit < 0:
		c.RateLimit = ratelimit.Limit{PerSecond: -1}
	case rateLimit == 0 && rateBurst == 0:
		// The API's defaults.
	case rateLimit == 0:
		c.RateLimit = ratelimit.Limit{PerSecond: httpapi.DefaultRatePerSecond, Burst: rateBurst}
	default:
		// A zero burst becomes one second's worth of the rate.
		c.RateLimit = ratelimit.Limit{PerSecond: rateLimit, Burst: rateBurst}
	}
	if c.StoreWait < 0 {
		return c, fmt.Errorf("%w: -store-wait must not be negative", errUsage)
	}
	if c.Workers < 0 {
		return c, fmt.Errorf("%w: -workers must not be negative", errUsage)
	}
	if c.Dashboard && c.DashboardInsecureCookies && !loopbackAddr(c.Addr) {
		return c, fmt.Errorf("%w: -dashboard-insecure-cookies is for plain HTTP on loopback: listen on 127.0.0.1 or [::1] (-addr %q)", errUsage, c.Addr)
	}
	if c.Relay.Addr != "" {
		if _, err := mail.NewRelay(c.Relay); err != nil {
			return c, fmt.Errorf("%w: -smtp-relay needs host:port and -mail-from an address: %v", errUsage, err)
		}
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
			return c, fmt.Errorf("%w: -smtp-relay needs -public-url, the console's origin such as https://validmail.example.com", errUsage)
		}
	}
	if err := checkStripe(&c, packs); err != nil {
		return c, err
	}
	if c.BootstrapKey != "" && c.BootstrapEmail == "" {
		return c, fmt.Errorf("%w: -bootstrap-key needs -bootstrap-email", errUsage)
	}
	if c.BootstrapKey != "" && store.CheckSecret(c.BootstrapKey) != nil {
		return c, fmt.Errorf("%w: -bootstrap-key: want %s followed by 43 letters or digits", errUsage, store.SecretPrefix)
	}
	return c, nil
}

// defaultPacks are the credit packs sold unless -credit-packs says
// otherwise.
const defaultPacks = "1000:900:usd,10000:7500:usd,100000:50000:usd"

// checkStripe checks the Stripe flags and reads the packs into c.
func checkStripe(c *config, packs string) error {
	if c.Stripe.SecretKey == "" {
		if c.Stripe.WebhookSecret != "" {
			return fmt.Errorf("%w: -stripe-webhook-secret needs -stripe-secret-key", errUsage)
		}
		return nil
	}
	p, err := billing.ParsePacks(packs)
	if err != nil || len(p) == 0 {
		return fmt.Errorf("%w: -credit-packs %q: want CREDITS:PRICE:CURRENCY, comma-separated (%v)", errUsage, packs, err)
	}
	c.Stripe.Packs = p
	for _, pk := range p {
		if pk.Plan == "" || c.Plans == nil {
			continue
		}
		if _, err := c.Plans.Get(pk.Plan); err != nil {
			return fmt.Errorf("%w: -credit-packs: the pack of %d credits sells %v", errUsage, pk.Credits, err)
		}
	}
	if c.Stripe.WebhookSecret == "" {
		return fmt.Errorf("%w: -stripe-secret-key needs -stripe-webhook-secret, the signing secret of the webhook endpoint", errUsage)
	}
	if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return fmt.Errorf("%w: -stripe-secret-key needs -public-url, the origin buyers return to from Stripe's page", errUsage)
	}
	if u, err := url.Parse(c.Stripe.APIURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%w: -stripe-api-url %q: want an http or https URL", errUsage, c.Stripe.APIURL)
	}
	return nil
}

// validNameserver reports whether s names a nameserver: an IP address, or
// host:port with a port from 1 to 65535.
func validNameserver(s string) bool {
	if _, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return true
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n >= 1 && n <= 65535
}

// loopbackAddr reports whether a listen address names a loopback host.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
