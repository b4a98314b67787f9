package netpolicy_test

import (
	"fmt"
	"net/netip"

	"github.com/validmail/validmail/emailcheck/netpolicy"
)

func ExampleIsPublic() {
	for _, a := range []string{"8.8.8.8", "10.0.0.1", "64:ff9b::808:808", "64:ff9b::7f00:1", "2002:a01:203::1", "2606:4700:4700::1111"} {
		fmt.Println(a, netpolicy.IsPublic(netip.MustParseAddr(a)))
	}
	// Output:
	// 8.8.8.8 true
	// 10.0.0.1 false
	// 64:ff9b::808:808 true
	// 64:ff9b::7f00:1 false
	// 2002:a01:203::1 false
	// 2606:4700:4700::1111 true
}
