// Command inprocess validates the addresses given as arguments with the
// emailcheck library, in-process, and prints each result as JSON.
//
//	go run ./examples/inprocess jane.doe@gmail.com info@gmial.com
//	go run ./examples/inprocess -dns 127.0.0.1:5353 jane.doe@gmail.com
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/validmail/validmail/emailcheck"
)

func main() {
	dnsServers := flag.String("dns", "", "comma-separated DNS servers (host:port); default /etc/resolv.conf")
	flag.Parse()

	cfg := &emailcheck.Config{}
	if *dnsServers != "" {
		cfg.Nameservers = strings.Split(*dnsServers, ",")
	}
	v, err := emailcheck.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer v.Close()

	out := json.NewEncoder(os.Stdout)
	for res, err := range v.ValidateMany(context.Background(), slices.Values(flag.Args()), nil) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out.Encode(res)
	}
}
