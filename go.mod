module github.com/validmail/validmail

go 1.26.8
