module github.com/cup-dev/cup/sdk/go

go 1.26
