package emailcheck

import (
	_ "embed"
	"fmt"
	"strings"
)

//go:embed data/parking_mx.txt
var embeddedParkingMX string

// parkKind is what a parked domain's mail host says of it.
type parkKind uint8

const (
	parkNone      parkKind = iota // not a parking or registrar default host
	parkRegistrar                 // a registrar's default mail host: real owners use it too
	parkService                   // a parking or domain-sale service: nobody's mailbox
)

// parseParkingMX reads data/parking_mx.txt: tab-separated host suffix,
// kind and owner.
func parseParkingMX(data string) (map[string]parkKind, error) {
	out := make(map[string]parkKind)
	n := 0
	for line := range strings.Lines(data) {
		n++
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" || f[2] == "" {
			return nil, fmt.Errorf("parking hosts line %d: want host, kind and owner", n)
		}
		switch f[1] {
		case "parking":
			out[f[0]] = parkService
		case "registrar":
			out[f[0]] = parkRegistrar
		default:
			return nil, fmt.Errorf("parking hosts line %d: kind %q", n, f[1])
		}
	}
	return out, nil
}

// parkedKind returns what the parking list says of an MX host: the kind
// of the entry it equals or is below, or parkNone.
func (c *classifier) parkedKind(host string) parkKind {
	for s := host; ; {
		if k, ok := c.parking[s]; ok {
			return k
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			return parkNone
		}
		s = s[i+1:]
	}
}

// parkedMX reports whether an MX host belongs to a domain-parking or
// domain-sale service, or is a registrar's default mail host: many
// domains nobody reads mail at share it.
func (c *classifier) parkedMX(host string) bool { return c.parkedKind(host) != parkNone }
