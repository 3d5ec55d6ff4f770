module github.com/cup-dev/cup/examples/reconcilers/flagbundle

go 1.26

require github.com/cup-dev/cup/sdk/go v0.0.0

replace github.com/cup-dev/cup/sdk/go => ../../../sdk/go
