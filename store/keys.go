package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Permission is something an API key may do.
type Permission string

// Permissions.
const (
	// PermValidate allows GET /validate.
	PermValidate Permission = "validate"
	// PermBatch allows submitting asynchronous batches and reading their jobs.
	PermBatch Permission = "batch"
	// PermStats allows reading the account.
	PermStats Permission = "stats"
	// PermKeys allows managing API keys.
	PermKeys Permission = "keys"
	// PermWebhooks allows managing the account's webhook.
	PermWebhooks Permission = "webhooks"
)

// ErrInvalidPermission reports a permission name that is not one of the
// constants.
var ErrInvalidPermission = errors.New("store: invalid permission")

// Valid reports whether p is one of the defined permissions.
func (p Permission) Valid() bool {
	switch p {
	case PermValidate, PermBatch, PermStats, PermKeys, PermWebhooks:
		return true
	}
	return false
}

// ParsePermission returns the permission named s, or an error matching
// [ErrInvalidPermission].
func ParsePermission(s string) (Permission, error) {
	p := Permission(s)
	if !p.Valid() {
		return "", fmt.Errorf("%w: %q", ErrInvalidPermission, s)
	}
	return p, nil
}

// AllPermissions returns every permission.
func AllPermissions() []Permission {
	return []Permission{PermValidate, PermBatch, PermStats, PermKeys, PermWebhooks}
}

// SignupPermissions returns the permissions of the key an account gets at
// signup: validate, batch and stats.
func SignupPermissions() []Permission {
	return []Permission{PermValidate, PermBatch, PermStats}
}

// checkPermissions returns nil when every permission is valid.
func checkPermissions(ps []Permission) error {
	for _, p := range ps {
		if !p.Valid() {
			return fmt.Errorf("%w: %q", ErrInvalidPermission, string(p))
		}
	}
	return nil
}

// SecretPrefix starts every API key secret.
const SecretPrefix = "vm_live_"

// secretBodyLen is the number of base62 digits that hold 32 bytes.
const secretBodyLen = 43

// displayLen is the number of secret characters after SecretPrefix kept in
// the display prefix.
const displayLen = 4

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// NewSecret returns a fresh API key secret: [SecretPrefix] and 32 random
// bytes in base62, 51 characters in all.
func NewSecret() string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand since Go 1.24)
	return SecretPrefix + encodeBase62(b[:])
}

func encodeBase62(b []byte) string {
	n := new(big.Int).SetBytes(b)
	out := make([]byte, secretBodyLen)
	base := big.NewInt(62)
	mod := new(big.Int)
	for i := secretBodyLen - 1; i >= 0; i-- {
		n.DivMod(n, base, mod)
		out[i] = base62[mod.Int64()]
	}
	return string(out)
}

// CheckSecret reports whether s has the shape of a secret: the prefix and
// 43 base62 characters. It says nothing about whether a key exists.
func CheckSecret(s string) error {
	body, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok || len(body) != secretBodyLen {
		return ErrInvalidKey
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(base62, body[i]) < 0 {
			return ErrInvalidKey
		}
	}
	return nil
}

// HashSecret returns the lower-case hex SHA-256 of secret: the only form of
// a secret a backend stores and looks up.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// DisplayPrefix returns the part of secret safe to show in listings:
// [SecretPrefix] and the next 4 characters.
func DisplayPrefix(secret string) string {
	n := min(len(secret), len(SecretPrefix)+displayLen)
	return secret[:n]
}

// NewKeyMaterial resolves p's secret and permissions the way every backend
// must: it generates a secret when p.Secret is empty, checks it and the
// permissions, and returns the secret with its hash, display prefix and the
// permission list to store.
func NewKeyMaterial(p CreateKeyParams) (secret, hash, prefix string, perms []Permission, err error) {
	secret = p.Secret
	if secret == "" {
		secret = NewSecret()
	} else if err := CheckSecret(secret); err != nil {
		return "", "", "", nil, fmt.Errorf("store: malformed secret: %w", err)
	}
	perms = p.Permissions
	if perms == nil {
		perms = SignupPermissions()
	}
	if err := checkPermissions(perms); err != nil {
		return "", "", "", nil, err
	}
	perms = append([]Permission(nil), perms...)
	return secret, HashSecret(secret), DisplayPrefix(secret), perms, nil
}
