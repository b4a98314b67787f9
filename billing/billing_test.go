package billing_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/validmail/validmail/billing"
)

func TestParsePacks(t *testing.T) {
	tests := []struct {
		in   string
		want []billing.Pack
		err  bool
	}{
		{"", nil, false},
		{"1000:900:usd", []billing.Pack{{Credits: 1000, Price: 900, Currency: "usd"}}, false},
		{"1000:900:USD, 10000:7500:eur", []billing.Pack{{1000, 900, "usd", ""}, {10000, 7500, "eur", ""}}, false},
		{"1000:900", nil, true},
		{"1000:0:usd", nil, true},
		{"0:900:usd", nil, true},
		{"x:900:usd", nil, true},
		{"1000:900:dollars", nil, true},
		{"1000:900:usd,1000:800:usd", nil, true},
		{"1000:-5:usd", nil, true},
		{"10000:7500:usd:pro", []billing.Pack{{10000, 7500, "usd", "pro"}}, false},
		{"10000:7500:usd:a b", nil, true},
		{"10000:7500:usd:pro:x", nil, true},
	}
	for _, tt := range tests {
		got, err := billing.ParsePacks(tt.in)
		if (err != nil) != tt.err || (err != nil && !errors.Is(err, billing.ErrInvalidPacks)) {
			t.Errorf("ParsePacks(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParsePacks(%q) = %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ParsePacks(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func TestFindPackAndGrantKey(t *testing.T) {
	packs := []billing.Pack{{1000, 900, "usd", ""}}
	if p, err := billing.FindPack(packs, 1000); err != nil || p != packs[0] {
		t.Fatalf("FindPack(1000) = %v, %v", p, err)
	}
	if _, err := billing.FindPack(packs, 999); !errors.Is(err, billing.ErrUnknownPack) {
		t.Fatalf("FindPack(999): %v", err)
	}
	if id, ok := billing.CheckoutOfGrant(billing.GrantKey("cs_1")); !ok || id != "cs_1" {
		t.Fatalf("CheckoutOfGrant(GrantKey) = %q, %v", id, ok)
	}
	for _, k := range []string{"", "signup", "checkout:"} {
		if _, ok := billing.CheckoutOfGrant(k); ok {
			t.Errorf("CheckoutOfGrant(%q) names a checkout", k)
		}
	}
}

func ExampleParsePacks() {
	packs, err := billing.ParsePacks("1000:900:usd,10000:7500:usd")
	if err != nil {
		panic(err)
	}
	for _, p := range packs {
		fmt.Println(p.Credits, "credits for", p.Price, p.Currency)
	}
	// Output:
	// 1000 credits for 900 usd
	// 10000 credits for 7500 usd
}
