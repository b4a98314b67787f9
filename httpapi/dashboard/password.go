package dashboard

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password rules: a length, and not a password everyone tries first. No
// composition rules (NIST SP 800-63B).
const (
	MinPasswordLength = 8
	MaxPasswordLength = 128
)

// Argon2id parameters: OWASP's first recommended set (19 MiB, 2 passes,
// one lane), a 16-byte salt and a 32-byte key, encoded as a PHC string.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonKeyLen  = 32
	argonSaltLen = 16
)

//go:embed common_passwords.txt
var commonPasswordList string

// Errors a password can be refused with.
var (
	ErrPasswordLength = fmt.Errorf("dashboard: a password has %d to %d characters", MinPasswordLength, MaxPasswordLength)
	ErrPasswordCommon = errors.New("dashboard: this password is one of the most common ones")
	errBadHash        = errors.New("dashboard: not an argon2id hash")
)

// hasher computes argon2id hashes, at most slots at once, so that a flood
// of sign-ins queues for CPU instead of exhausting memory.
type hasher struct {
	slots  chan struct{}
	common map[string]bool

	dummyOnce sync.Once
	dummy     string // a hash to verify against when the account is unknown
}

func newHasher(concurrency int) *hasher {
	h := &hasher{slots: make(chan struct{}, max(concurrency, 1)), common: map[string]bool{}}
	sc := bufio.NewScanner(strings.NewReader(commonPasswordList))
	for sc.Scan() {
		if w := strings.TrimSpace(sc.Text()); w != "" && !strings.HasPrefix(w, "#") {
			h.common[strings.ToLower(w)] = true
		}
	}
	return h
}

// check reports why a new password is refused, or nil.
func (h *hasher) check(password string) error {
	n := utf8.RuneCountInString(password)
	if n < MinPasswordLength || n > MaxPasswordLength {
		return ErrPasswordLength
	}
	if h.common[strings.ToLower(password)] {
		return ErrPasswordCommon
	}
	return nil
}

func (h *hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *hasher) release() { <-h.slots }

// hash returns the PHC string of password with a new salt.
func (h *hasher) hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	rand.Read(salt)
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	h.release()
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

// verify reports whether password matches the PHC string, in time that
// does not depend on where they differ.
func (h *hasher) verify(ctx context.Context, password, phc string) (bool, error) {
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var version int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errBadHash
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m == 0 || m > 1<<20 || t == 0 || t > 16 || p == 0 {
		return false, errBadHash
	}
	enc := base64.RawStdEncoding
	salt, err1 := enc.DecodeString(parts[4])
	want, err2 := enc.DecodeString(parts[5])
	// A short key or salt would make a match a matter of luck: refuse
	// them, whoever wrote the hash.
	if err1 != nil || err2 != nil || len(salt) < 8 || len(want) < 16 || len(want) > 128 {
		return false, errBadHash
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, t, m, p, uint32(len(want)))
	h.release()
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// dummyHash returns a hash to verify against when no account matches, so
// that a wrong email takes as long as a wrong password.
func (h *hasher) dummyHash(ctx context.Context) string {
	h.dummyOnce.Do(func() {
		h.dummy, _ = h.hash(context.WithoutCancel(ctx), "not a password anyone has")
	})
	return h.dummy
}

// HashPassword checks a new password against the dashboard's rules
// (returning [ErrPasswordLength] or [ErrPasswordCommon]) and returns its
// argon2id hash as the dashboard stores it, for operator tools that set a
// password (such as validmaild account set-password).
func HashPassword(ctx context.Context, password string) (string, error) {
	h := newHasher(1)
	if err := h.check(password); err != nil {
		return "", err
	}
	return h.hash(ctx, password)
}
