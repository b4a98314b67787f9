package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
)

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
	Addr           string
	Store          string
	DNS            []string
	Workers        int
	BootstrapEmail string
	BootstrapKey   string
	LogLevel       slog.Level
	Metrics        bool
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
		fmt.Fprintf(fs.Output(), "Usage:\n  validmaild [flags]\n  validmaild account create -email E -store URL\n\n"+
			"Each flag may also be set by the environment variable %s<NAME>, e.g. %s.\n\nFlags:\n", envPrefix, envName("store"))
		fs.PrintDefaults()
	}
	var (
		c        config
		dns      string
		logLevel string
	)
	fs.StringVar(&c.Addr, "addr", ":8080", "listen `address` (host:port)")
	fs.StringVar(&c.Store, "store", "memory", "backend: memory, postgres://… (schema=NAME selects a schema) or redis://… (prefix=NAME selects a key prefix)")
	fs.StringVar(&dns, "dns", "", "comma-separated DNS `servers` (host:port); default those of /etc/resolv.conf")
	fs.IntVar(&c.Workers, "workers", jobs.DefaultWorkers, "batch validations run at once by this instance; 0 serves the API only")
	fs.StringVar(&c.BootstrapEmail, "bootstrap-email", "", "create an account with this `email` at start if it is missing")
	fs.StringVar(&c.BootstrapKey, "bootstrap-key", "", "create this API `key` (every permission) for -bootstrap-email if it is missing")
	fs.StringVar(&logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&c.Metrics, "metrics", false, "serve Prometheus metrics at /metrics")
	if err := parseFlags(fs, args, getenv); err != nil {
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
			c.DNS = append(c.DNS, s)
		}
	}
	if c.Workers < 0 {
		return c, fmt.Errorf("%w: -workers must not be negative", errUsage)
	}
	if c.BootstrapKey != "" && c.BootstrapEmail == "" {
		return c, fmt.Errorf("%w: -bootstrap-key needs -bootstrap-email", errUsage)
	}
	if c.BootstrapKey != "" && store.CheckSecret(c.BootstrapKey) != nil {
		return c, fmt.Errorf("%w: -bootstrap-key: want %s followed by 43 letters or digits", errUsage, store.SecretPrefix)
	}
	return c, nil
}
