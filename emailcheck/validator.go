package emailcheck

import (
	"context"
	"iter"
)

// Validator validates addresses. It is safe for concurrent use; create one
// and share it, so that its DNS cache is shared.
type Validator struct {
	cfg Config
}

// New returns a Validator configured by cfg; nil means all defaults.
func New(cfg *Config) (*Validator, error) {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	return &Validator{cfg: c}, nil
}

// CallOption adjusts one call of Validate.
type CallOption func(*callOptions)

type callOptions struct {
	source string
}

// WithSource sets meta.source for one call.
func WithSource(source string) CallOption {
	return func(o *callOptions) { o.source = source }
}

// Validate checks one address. An unacceptable address is reported in the
// Result, never as an error; the error is non-nil only when ctx ends first.
func (v *Validator) Validate(ctx context.Context, email string, opts ...CallOption) (Result, error) {
	return Result{}, nil
}

// ManyOptions configures ValidateMany. The zero value gives defaults.
type ManyOptions struct {
	// Concurrency bounds the validations in flight. Default 512.
	Concurrency int
	// Source sets meta.source for every result.
	Source string
}

// ValidateMany validates every address of emails with bounded concurrency
// and yields the results in input order. Reading from emails stops while
// results wait to be consumed (back-pressure). When ctx ends, it yields
// ctx's error once and stops; breaking out of the loop cancels the work in
// flight.
func (v *Validator) ValidateMany(ctx context.Context, emails iter.Seq[string], opts *ManyOptions) iter.Seq2[Result, error] {
	return func(yield func(Result, error) bool) {}
}

// Close releases the Validator's resources. It is safe to call more than once.
func (v *Validator) Close() error { return nil }
