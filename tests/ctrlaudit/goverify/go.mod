module ctrlaudit.test/goverify

go 1.25.0

require (
	github.com/transparency-dev/formats v0.1.1
	github.com/transparency-dev/merkle v0.0.2
	golang.org/x/mod v0.36.0
)
