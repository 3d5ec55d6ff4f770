package registry

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/controller/wasm"
	"github.com/cup-dev/cup/scm"
)

// Controllers are the controller types, by the spec.type of a Controller
// resource.
var Controllers = Registry[ControllerKind]{what: "controller type"}

// SCMs are the SCM providers, by the name --scm gives.
var SCMs = Registry[SCMFactory]{what: "SCM provider"}

// ControllerKind builds the controllers of one type.
type ControllerKind struct {
	// Files, when set, returns the files a controller of this kind needs
	// beside its spec (a WASM module), with paths relative to the folder
	// of the file declaring the controller. A spec it cannot parse fails
	// here, before anything is built.
	Files func(spec json.RawMessage) ([]File, error)
	// New builds the controller c configures.
	New func(ctx context.Context, c ControllerConfig) (controller.Controller, error)
}

// File is a file a controller needs, as its kind names it.
type File struct {
	// What the file is, for messages: "module".
	What string
	// Path is the file's path as the spec gives it, relative to the folder
	// of the file declaring the controller.
	Path string
}

// ControllerConfig is one Controller resource, with what building it takes.
type ControllerConfig struct {
	// Name is the Controller's metadata.name.
	Name string
	// Spec is its spec.spec, nil when it has none.
	Spec json.RawMessage
	// Files holds the contents of the files ControllerKind.Files named, by
	// their File.Path.
	Files map[string][]byte
	// WASM runs WASM modules; controllers share it.
	WASM *wasm.Runtime
}

// SCMFactory builds a provider of proposals for one repository.
type SCMFactory func(c SCMConfig) (scm.Provider, error)

// SCMConfig configures an SCM provider.
type SCMConfig struct {
	// BaseURL is the API's base URL; empty for the host's public service
	// where there is one.
	BaseURL string
	// Repository is the repository on the host: owner/repo, or a GitLab
	// project's path.
	Repository string
	// HTTPClient authenticates and waits out rate limits.
	HTTPClient *http.Client
}
