module github.com/validmail/validmail/examples/aftership

go 1.26.0

require (
	github.com/AfterShip/email-verifier v1.4.1
	github.com/validmail/validmail v0.0.0
)

require (
	github.com/hashicorp/golang-lru/v2 v2.0.7 // indirect
	github.com/hbollon/go-edlib v1.6.0 // indirect
	github.com/miekg/dns v1.1.73 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

replace github.com/validmail/validmail => ../..
