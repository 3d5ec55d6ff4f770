package servertest_test

import (
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	cupv1alpha1 "github.com/cup-dev/cup/gen/cup/v1alpha1"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/server"
)

func TestStartServesTheDemoOnEveryProtocol(t *testing.T) {
	t.Parallel()
	for _, p := range servertest.Protocols {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			s := servertest.Start(t)
			c := s.Clients(p)
			defs, err := c.Discovery.ListDefinitions(t.Context(), connect.NewRequest(&cupv1alpha1.ListDefinitionsRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range defs.Msg.Definitions {
				names = append(names, d.Name)
			}
			if got := strings.Join(names, ","); got != "bundles.flags.cup.dev,configlayers.config.cup.dev,flagbundles.flags.cup.dev,flags.flags.cup.dev,serviceconfigs.config.cup.dev,services.apps.cup.dev" {
				t.Fatalf("definitions = %s", got)
			}
			spec, _ := structpb.NewStruct(map[string]any{"enabled": true})
			put, err := c.Resources.Put(t.Context(), connect.NewRequest(&cupv1alpha1.PutRequest{
				Group: "flags.cup.dev", Version: "v1alpha1", Plural: "flags", Namespace: "default", Name: "beta",
				Resource: &cupv1alpha1.Resource{Metadata: &cupv1alpha1.ObjectMeta{Name: "beta"}, Spec: spec},
			}))
			if err != nil {
				t.Fatal(err)
			}
			if res := put.Msg.Result; res.BaseCommit != s.Initial || res.Commit != s.Head(t) {
				t.Fatalf("Put = %v; main at %s", res, s.Head(t))
			}
			files, err := s.Repo.Files("main")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(files["flags/default/beta.yaml"]), "enabled: true") {
				t.Fatalf("flags/default/beta.yaml = %q", files["flags/default/beta.yaml"])
			}
		})
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	s := servertest.Start(t,
		servertest.WithFiles(map[string][]byte{"flags/default/dark-mode.yaml": nil}),
		servertest.WithTypes(func(_ testing.TB, types []*server.Type) []*server.Type {
			return slices.DeleteFunc(types, func(ty *server.Type) bool { return ty.Plural == "services" })
		}),
		servertest.WithServerOptions(server.WithMaxListPage(1)))
	r := s.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?limit=1", "")
	if r.Status != 200 || strings.Contains(r.Body, "dark-mode") || !strings.Contains(r.Body, "new-checkout") {
		t.Fatalf("GET = %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "GET", "/apis/flags.cup.dev/v1alpha1/namespaces/default/flags?limit=2", ""); r.Status != 400 {
		t.Fatalf("GET over the page limit = %d %s", r.Status, r.Body)
	}
	if r := s.Do(t, "GET", "/apis/apps.cup.dev/v1alpha1/namespaces/default/services", ""); r.Status != 404 {
		t.Fatalf("GET of a type left out = %d %s", r.Status, r.Body)
	}
}
