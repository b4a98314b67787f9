module github.com/validmail/validmail

go 1.26.8

require github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
