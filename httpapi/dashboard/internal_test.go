package dashboard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/validmail/validmail/credits"
)

func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	h := newHasher(2)
	phc, err := h.hash(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", phc)
	}
	if again, _ := h.hash(ctx, "correct horse battery staple"); again == phc {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for pw, want := range map[string]bool{"correct horse battery staple": true, "correct horse battery stapl": false, "": false} {
		ok, err := h.verify(ctx, pw, phc)
		if err != nil || ok != want {
			t.Errorf("verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=18$m=1,t=1,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=99999999,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=19456,t=2,p=1$!!$aGFzaA", "plain"} {
		if _, err := h.verify(ctx, "x", bad); !errors.Is(err, errBadHash) {
			t.Errorf("verify against %q: %v, want errBadHash", bad, err)
		}
	}
	for pw, want := range map[string]error{"short": ErrPasswordLength, "Password123": ErrPasswordCommon, strings.Repeat("é", 128): nil,
		strings.Repeat("é", 129): ErrPasswordLength, "a long enough passphrase": nil} {
		if err := h.check(pw); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("check(%.12q) = %v, want %v", pw, err, want)
		}
	}
}

// TestHashConcurrencyBounded: no more hashes run at once than the hasher
// allows, however many sign-ins arrive.
func TestHashConcurrencyBounded(t *testing.T) {
	h := newHasher(2)
	if err := h.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.hash(ctx, "a third one waits"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third hash while two run: %v, want it to wait until its context ends", err)
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/dashboard/keys":            "/dashboard/keys",
		"/dashboard/":                "/dashboard/",
		"":                           "",
		"https://evil.example/":      "",
		"//evil.example/dashboard/":  "",
		"/dashboard/../admin":        "",
		"/other":                     "",
		"/dashboard/keys\r\nX: y":    "",
		"/dashboard\\..\\evil":       "",
		"/dashboard/batches/1?x=1#y": "/dashboard/batches/1?x=1#y",
	} {
		if got := safeNext("/dashboard", next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestReadList(t *testing.T) {
	got, err := readList(strings.NewReader("\ufeffa@x.com\r\n\n  b@x.com  \n"), false)
	if err != nil || strings.Join(got, ",") != "a@x.com,b@x.com" {
		t.Fatalf("text: %v, %v", got, err)
	}
	got, err = readList(strings.NewReader("name,E-mail\nJane,jane@x.com\nJoe,\"joe@x.com\"\n"), true)
	if err != nil || strings.Join(got, ",") != "jane@x.com,joe@x.com" {
		t.Fatalf("csv with a header: %v, %v", got, err)
	}
	got, err = readList(strings.NewReader("jane@x.com,Jane\njoe@x.com,Joe\n"), true)
	if err != nil || strings.Join(got, ",") != "jane@x.com,joe@x.com" {
		t.Fatalf("csv without a header: %v, %v", got, err)
	}
	if _, err := readList(strings.NewReader(strings.Repeat("a@x.com\n", maxList+1)), false); !errors.Is(err, errListTooLong) {
		t.Fatalf("a list over the limit: %v", err)
	}
}

func FuzzReadList(f *testing.F) {
	f.Add("a@x.com\nb@x.com", false)
	f.Add("email,name\n\"a@x.com\",A\n", true)
	f.Add("\ufeffE-Mail\n\"unterminated", true)
	f.Fuzz(func(t *testing.T, in string, isCSV bool) {
		got, err := readList(strings.NewReader(in), isCSV)
		if err != nil {
			return
		}
		if len(got) > maxList {
			t.Fatalf("%d addresses, more than %d", len(got), maxList)
		}
		for _, s := range got {
			if s == "" || s != strings.TrimSpace(s) {
				t.Fatalf("address %q is empty or untrimmed", s)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	h := newHasher(1)
	// A fixed salt, so that every fuzzing process has the same hash.
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte("seed password"), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	phc := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", argonMemory, argonTime, argonThreads, enc.EncodeToString(salt), enc.EncodeToString(key))
	if ok, err := h.verify(context.Background(), "seed password", phc); !ok || err != nil {
		f.Fatalf("the seed hash does not verify: %v", err)
	}
	f.Add(phc)
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA")
	f.Add("$argon2id$v=19$m=,t=,p=$$")
	f.Fuzz(func(t *testing.T, s string) {
		ok, err := h.verify(context.Background(), "seed password", s)
		if err == nil && ok && s != phc {
			// Only the real hash may match; another encoding of it could,
			// but never a different key.
			if !strings.HasSuffix(s, phc[strings.LastIndex(phc, "$"):]) {
				t.Fatalf("%q matched", s)
			}
		}
	})
}

func TestUsageChart(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	hist := []credits.Entry{
		{Delta: 300, Reason: credits.ReasonSignup, Time: now.AddDate(0, 0, -40)},
		{Delta: -10, Reason: credits.ReasonCharge, Time: now.AddDate(0, 0, -3)},
		{Delta: 2, Reason: credits.ReasonRefund, Time: now.AddDate(0, 0, -3)},
		{Delta: -5, Reason: credits.ReasonCharge, Time: now},
		{Delta: -99, Reason: credits.ReasonCharge, Time: now.AddDate(0, 0, -31)}, // outside the window
	}
	svg := string(usageChart(hist, now, 30))
	for _, want := range []string{"13 credits used in the last 30 days", "<title>Nov 21: 8</title>", "<title>Nov 24: 5</title>", `role="img"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q:\n%s", want, svg)
		}
	}
	if strings.Count(svg, "<rect") != 30 {
		t.Errorf("%d bars, want 30", strings.Count(svg, "<rect"))
	}
	one := string(usageChart([]credits.Entry{{Delta: -1, Reason: credits.ReasonCharge, Time: now}}, now, 30))
	if !strings.Contains(one, "1 credit used in the last 30 days") {
		t.Errorf("one credit: %s", one)
	}
}
