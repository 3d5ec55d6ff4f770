module github.com/cup-dev/cup/examples/controllers/flagfile

go 1.26

require (
	github.com/cup-dev/cup/sdk/go v0.0.0
	gopkg.in/yaml.v3 v3.0.1
)

replace github.com/cup-dev/cup/sdk/go => ../../../sdk/go
