package smtpprobe_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/smtpprobe"
)

// A validator that asks mail servers about every LIKELY address. The
// prober refuses to start without a HELO name and a sender of the
// operator's.
func ExampleNew() {
	if _, err := smtpprobe.New(smtpprobe.Config{}); errors.Is(err, emailcheck.ErrConfig) {
		fmt.Println("refused: no HELO name or sender")
	}
	p, err := smtpprobe.New(smtpprobe.Config{HELO: "probe.example.org", MailFrom: "bounces@example.org"})
	if err != nil {
		log.Fatal(err)
	}
	v, err := emailcheck.New(&emailcheck.Config{Prober: p})
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	fmt.Println("probing")
	// Output:
	// refused: no HELO name or sender
	// probing
}
