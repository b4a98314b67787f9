module github.com/validmail/validmail

go 1.26.8

require github.com/miekg/dns v1.1.73

require (
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
