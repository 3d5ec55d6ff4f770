package cuelayers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/controller"
	"github.com/cup-dev/cup/internal/document"
	"github.com/cup-dev/cup/internal/memsource"
	"github.com/cup-dev/cup/internal/servertest"
	"github.com/cup-dev/cup/runtime"
	"github.com/cup-dev/cup/runtime/cuelayers"
	"github.com/cup-dev/cup/server"
)

// benchSchema is what every service's configuration must satisfy.
const benchSchema = `image: string
replicas: int & >=1
port: int & >0 & <65536
env: [string]: string
features: [string]: bool
resources: [_]: {cpu: string, memory: string}
`

// benchNamespaces are the environments the services run in, each with a
// layer of its own.
var benchNamespaces = []string{"prod-eu", "prod-us", "staging", "dev"}

// orgLayer is the organisation's base (namespace org): CUE with defaults
// and constraints for every service, about 2 KB of file.
func orgLayer() []byte {
	return []byte(`apiVersion: test.cup.dev/v1
kind: Layer
metadata:
  namespace: org
  name: base
  labels: {layer: shared}
spec:
  cue: |
    // Organisation-wide defaults and constraints for every service.
    image:          string & =~"^registry\\.example/[a-z0-9-]+:[0-9A-Za-z._-]+$"
    replicas:       *2 | int & >=1 & <=50
    port:           *8080 | int & >0 & <65536
    serviceAccount: *"default" | string
    labels: [string]: string & =~"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
    labels: {
    	team:         string
    	tier:         *"backend" | "frontend" | "worker"
    	"managed-by": "cup"
    }
    annotations: [string]: string
    resources: {
    	requests: {cpu: *"100m" | string, memory: *"128Mi" | string}
    	limits: {cpu: *"500m" | string, memory: *"512Mi" | string}
    }
    env: [=~"^[A-Z][A-Z0-9_]*$"]: string
    env: {
    	LOG_LEVEL:                   *"info" | "debug" | "warn" | "error"
    	LOG_FORMAT:                  *"json" | "text"
    	HTTP_PORT:                   "\(port)"
    	OTEL_EXPORTER_OTLP_ENDPOINT: *"http://otel-collector.observability:4317" | string
    	GOMAXPROCS:                  *"2" | string
    }
    features: [string]: bool
    features: {
    	tracing:        *true | bool
    	metrics:        *true | bool
    	profiling:      *false | bool
    	debugEndpoints: *false | bool
    }
    probes: [_]: {
    	path:                string
    	port:                *8080 | int
    	initialDelaySeconds: *5 | int & >=0
    	periodSeconds:       *10 | int & >0
    	timeoutSeconds:      *1 | int & >0
    	failureThreshold:    *3 | int & >0
    }
    probes: {
    	liveness: path:  *"/healthz" | string
    	readiness: path: *"/readyz" | string
    }
    rollout: {
    	strategy:       *"RollingUpdate" | "Recreate"
    	maxSurge:       *"25%" | string
    	maxUnavailable: *0 | int & >=0
    }
    autoscaling: {
    	enabled:              *false | bool
    	minReplicas:          *replicas | int & >=1
    	maxReplicas:          *(replicas * 4) | int & >=minReplicas
    	targetCPUUtilization: *70 | int & >0 & <=100
    }
    securityContext: {
    	runAsNonRoot:             true
    	runAsUser:                *10001 | int & >0
    	readOnlyRootFilesystem:   *true | bool
    	allowPrivilegeEscalation: false
    }
    terminationGracePeriodSeconds: *30 | int & >=0 & <=300
`)
}

// envLayer is the layer of environment ns: plain values, about 2 KB.
func envLayer(ns string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: test.cup.dev/v1\nkind: Layer\nmetadata:\n  namespace: %s\n  name: env\n  labels: {layer: shared}\nspec:\n  values:\n    env:\n", ns)
	region := map[string]string{"prod-eu": "eu-west-1", "prod-us": "us-east-1", "staging": "eu-central-1", "dev": "eu-central-1"}[ns]
	for _, kv := range [][2]string{
		{"ENVIRONMENT", ns}, {"REGION", region}, {"CLUSTER", ns + "-1"}, {"LOG_LEVEL", "warn"},
		{"DATABASE_HOST", "postgres." + ns + ".svc.cluster.local"}, {"DATABASE_PORT", "5432"}, {"DATABASE_SSLMODE", "verify-full"},
		{"REDIS_URL", "redis://redis." + ns + ".svc.cluster.local:6379/0"},
		{"KAFKA_BROKERS", "kafka-0.kafka." + ns + ":9092,kafka-1.kafka." + ns + ":9092,kafka-2.kafka." + ns + ":9092"},
		{"VAULT_ADDR", "https://vault." + ns + ".example:8200"}, {"OIDC_ISSUER", "https://login." + ns + ".example/realms/services"},
		{"SENTRY_ENVIRONMENT", ns}, {"STATSD_HOST", "statsd.observability"}, {"STATSD_PORT", "8125"},
		{"HTTP_PROXY", "http://egress-proxy." + ns + ":3128"}, {"NO_PROXY", ".svc,.cluster.local,10.0.0.0/8,127.0.0.1"}, {"TZ", "UTC"},
		{"AWS_REGION", region}, {"S3_BUCKET", "example-" + ns + "-assets"}, {"SMTP_HOST", "smtp." + ns + ".example:587"},
		{"FLAGS_URL", "http://flagd.platform:8013"},
	} {
		fmt.Fprintf(&b, "      %s: %q\n", kv[0], kv[1])
	}
	fmt.Fprintf(&b, `    features:
      tracing: true
      profiling: false
      canaryRouting: %v
      regionalFailover: %v
    annotations:
      example.com/cost-center: "platform"
      example.com/environment: %q
      example.com/pager: "oncall-%s"
    rollout:
      maxSurge: "50%%"
    terminationGracePeriodSeconds: 45
    nodeSelector:
      topology.kubernetes.io/region: %q
      node.example/pool: "general"
    tolerations:
      - {key: "dedicated", operator: "Equal", value: "services", effect: "NoSchedule"}
    ingress:
      className: "nginx-internal"
      tlsIssuer: "letsencrypt-%s"
      domain: "%s.example"
    podDisruptionBudget: {minAvailable: 1}
    serviceMonitor: {interval: "30s", scrapeTimeout: "10s"}
`, strings.HasPrefix(ns, "prod"), strings.HasPrefix(ns, "prod"), ns, ns, region, ns, ns)
	return []byte(b.String())
}

// appLayer is the override of service app (namespace ns, the i-th
// service), which names it: plain values, about 2 KB. build is the
// value of its BUILD_ID.
func appLayer(ns, app string, i, build int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: test.cup.dev/v1
kind: Layer
metadata:
  namespace: %[1]s
  name: %[2]s
spec:
  target: %[2]s
  values:
    image: "registry.example/%[2]s:2.%[3]d.%[4]d"
    replicas: %[5]d
    port: 8080
    serviceAccount: %[2]s
    labels: {app: %[2]s, team: team-%[6]d, tier: backend}
    resources:
      requests: {cpu: "%[7]dm", memory: "%[8]dMi"}
      limits: {cpu: "1", memory: "1Gi"}
    env:
`, ns, app, i%17, i%5, 2+i%5, i%12, 100+50*(i%4), 256+128*(i%3))
	for _, kv := range [][2]string{
		{"SERVICE_NAME", app}, {"BUILD_ID", fmt.Sprint(build)}, {"DATABASE_NAME", strings.ReplaceAll(app, "-", "_")},
		{"DATABASE_USER", app + "-rw"}, {"DATABASE_POOL_SIZE", fmt.Sprint(10 + i%20)}, {"CACHE_TTL_SECONDS", "300"},
		{"HTTP_TIMEOUT_MS", "2500"}, {"MAX_REQUEST_BYTES", "1048576"}, {"RATE_LIMIT_RPS", fmt.Sprint(100 * (1 + i%7))},
		{"UPSTREAM_PAYMENTS_URL", "http://payments." + ns + ".svc.cluster.local:8080"},
		{"UPSTREAM_INVENTORY_URL", "http://inventory." + ns + ".svc.cluster.local:8080"},
		{"QUEUE_TOPIC", app + ".events.v1"},
	} {
		fmt.Fprintf(&b, "      %s: %q\n", kv[0], kv[1])
	}
	b.WriteString("    features:\n")
	for j, f := range []string{"newCheckoutFlow", "asyncInvoices", "bulkExport", "darkMode", "smartRetries", "priceCache", "auditTrail", "v2Api"} {
		fmt.Fprintf(&b, "      %s: %v\n", f, (i+j)%3 == 0)
	}
	fmt.Fprintf(&b, `    probes:
      liveness: {initialDelaySeconds: 15}
      readiness: {path: "/ready", periodSeconds: 5}
      startup: {path: "/healthz", failureThreshold: 30}
    autoscaling: {enabled: true, maxReplicas: %d}
    annotations:
      example.com/owner: "team-%[2]d@example.com"
      example.com/runbook: "https://runbooks.example/%[3]s"
    ingress:
      hosts: ["%[3]s.%[4]s.example", "%[3]s.internal.example"]
      paths: ["/api", "/webhooks"]
    sidecars:
      envoy: {image: "registry.example/envoy:1.31.2", cpu: "50m", memory: "64Mi"}
    volumes:
      config: {mountPath: "/etc/%[3]s", configMap: "%[3]s-config"}
      tmp: {mountPath: "/tmp", emptyDir: true}
`, 12+i%8, i%12, app, ns)
	return []byte(b.String())
}

// appName is the name and namespace of the i-th service.
func appName(i int) (ns, name string) {
	return benchNamespaces[i%len(benchNamespaces)], fmt.Sprintf("svc-%04d", i)
}

// appFile is the App of a service, which selects the shared layers.
func appFile(ns, name string) []byte {
	return fmt.Appendf(nil, `{"apiVersion": "test.cup.dev/v1", "kind": "App", "metadata": {"namespace": %q, "name": %q},
 "spec": {"layerSelector": {"matchLabels": {"layer": "shared"}}}}`, ns, name)
}

// benchFiles is a repository of n services, their layers and the shared
// ones, without outputs.
func benchFiles(n int) map[string][]byte {
	fs := map[string][]byte{".cup/types.yaml": []byte(types), "layers/org/base.yaml": orgLayer()}
	for _, ns := range benchNamespaces {
		fs["layers/"+ns+"/env.yaml"] = envLayer(ns)
	}
	for i := range n {
		ns, name := appName(i)
		fs["apps/"+ns+"/"+name+".json"] = appFile(ns, name)
		fs["layers/"+ns+"/"+name+".yaml"] = appLayer(ns, name, i, 1)
	}
	return fs
}

// decodeResource decodes a file holding one resource, in YAML or JSON.
func decodeResource(b *testing.B, data []byte) *controller.Resource {
	b.Helper()
	js, err := document.SplitYAML(data)[0].JSON()
	if err != nil {
		b.Fatal(err)
	}
	var r controller.Resource
	if err := json.Unmarshal(js, &r); err != nil {
		b.Fatal(err)
	}
	return &r
}

// fileStore is a cuelayers.Store over files by path
// (<plural>/<namespace>/<name>.yaml), every commit made at the same time.
type fileStore struct {
	files map[string][]byte
	at    time.Time
}

var _ cuelayers.Store = (*fileStore)(nil)

func (s *fileStore) ResourceFile(_ context.Context, _ string, t controller.Type, namespace, name string) (string, []byte, error) {
	p := t.Plural + "/" + namespace + "/" + name + ".yaml"
	data, ok := s.files[p]
	if !ok {
		return "", nil, fs.ErrNotExist
	}
	return p, data, nil
}

func (s *fileStore) CommitTime(context.Context, string) (time.Time, error) { return s.at, nil }

// serverStore is a cuelayers.Store that reads the server set in it, so
// that one transform (and its cache of results) serves servers started
// one after the other.
type serverStore struct{ cuelayers.Store }

var _ cuelayers.Store = (*serverStore)(nil)

// benchConfig is the configuration of the config reconciler's transform.
var benchConfig = cuelayers.Config{Layers: layerType, Output: configType, Reference: "spec.config", GCAfter: time.Hour,
	Schema: benchSchema, SchemaPath: ".cup/schema.cue"}

// BenchmarkRender measures the transform alone on one primary with three
// layers of about 2 KB (the org's CUE base, an environment's values, the
// service's own override) over a store in memory: cold-ms is a reconcile
// whose result is not cached (one of the override's values changes each
// time), which starts a CUE worker process; warm-ms is the same request
// again, answered from the cache of results. Both are medians over the
// iterations.
func BenchmarkRender(b *testing.B) {
	ns, name := appName(0)
	store := &fileStore{files: map[string][]byte{
		"layers/org/base.yaml":       orgLayer(),
		"layers/" + ns + "/env.yaml": envLayer(ns),
	}, at: time.Unix(1_700_000_000, 0)}
	b.Logf("layer files: org %d bytes, environment %d, service %d", len(store.files["layers/org/base.yaml"]),
		len(store.files["layers/"+ns+"/env.yaml"]), len(appLayer(ns, name, 0, 0)))
	tr, err := cuelayers.New(benchConfig, store)
	if err != nil {
		b.Fatal(err)
	}
	primary := decodeResource(b, appFile(ns, name))
	base, env := decodeResource(b, store.files["layers/org/base.yaml"]), decodeResource(b, store.files["layers/"+ns+"/env.yaml"])
	var cold, warm []time.Duration
	build, size := 0, 0
	for b.Loop() {
		build++
		app := appLayer(ns, name, 0, build)
		store.files["layers/"+ns+"/"+name+".yaml"] = app
		req := &runtime.Request{Reconciler: "config", Revision: strings.Repeat("c0ffee", 6) + "0123", Primary: primary,
			Inputs: []*controller.Resource{base, env, decodeResource(b, app)}}
		t0 := time.Now()
		first, err := tr.Reconcile(b.Context(), req)
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		again, err := tr.Reconcile(b.Context(), req)
		t2 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		cold, warm = append(cold, t1.Sub(t0)), append(warm, t2.Sub(t1))
		size = len(first.Outputs[0].Spec)
		if want := fmt.Sprintf(`"BUILD_ID":"%d"`, build); !strings.Contains(string(first.Outputs[0].Spec), want) {
			b.Fatalf("the output %s does not hold %s", first.Outputs[0].Spec, want)
		}
		if a, c := first.Outputs[0].Metadata.Name, again.Outputs[0].Metadata.Name; a != c || first.PrimarySpec == nil {
			b.Fatalf("the same request made %s, then %s (primary spec %s)", a, c, first.PrimarySpec)
		}
	}
	b.Logf("output spec: %d bytes", size)
	b.ReportMetric(ms(p50(cold)), "cold-ms")
	b.ReportMetric(ms(p50(warm)), "warm-ms")
}

// BenchmarkResync1000 measures a resync of the config reconciler over
// 1,000 services in four namespaces, each with its own override and the
// shared org and environment layers, once they have converged: from
// Resync until the runtime is idle, every primary is reconciled again
// (its result from the cache) and no commit is made. transform-ms is the
// time spent in the transform per resync, summed over the workers.
// Converging first evaluates 1,000 distinct sets of layers, a CUE worker
// process each: about 100 s on 2 cores.
func BenchmarkResync1000(b *testing.B) {
	const n = 1000
	srv := startQuiet(b, benchFiles(n))
	tr, err := cuelayers.New(benchConfig, srv.Server.ReconcileStore().(cuelayers.Store))
	if err != nil {
		b.Fatal(err)
	}
	var calls, spent atomic.Int64
	timed := runtime.TransformFunc(func(ctx context.Context, req *runtime.Request) (*runtime.Response, error) {
		t0 := time.Now()
		defer func() { calls.Add(1); spent.Add(int64(time.Since(t0))) }()
		return tr.Reconcile(ctx, req)
	})
	reg := prometheus.NewRegistry()
	t0 := time.Now()
	rt, stop := runQuiet(b, srv, timed, reg)
	defer stop()
	if err := rt.WaitIdle(b.Context()); err != nil {
		b.Fatal(err)
	}
	log, err := srv.Repo.Log("main")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("converged in %s: %d transform calls, %d commits", time.Since(t0).Round(time.Millisecond), calls.Load(), len(log)-1)
	if got := countAt(b, srv, configType); got != n {
		b.Fatalf("%d configs after converging, want %d", got, n)
	}
	head := srv.Head(b)
	reconciles := counter(b, reg, "controller_runtime_reconcile_total")
	calls.Store(0)
	spent.Store(0)
	for b.Loop() {
		rt.Resync()
		if err := rt.WaitIdle(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
	if got := srv.Head(b); got != head {
		b.Fatalf("a resync with nothing changed moved the head to %.12s", got)
	}
	if got := counter(b, reg, "controller_runtime_reconcile_total") - reconciles; got != float64(n*b.N) {
		b.Fatalf("%v reconciles in %d resyncs, want %d", got, b.N, n*b.N)
	}
	b.ReportMetric(n, "primaries")
	b.ReportMetric(ms(time.Duration(spent.Load()))/float64(b.N), "transform-ms")
}

// BenchmarkCollect10000 measures a garbage collection pass over 10,000
// orphaned outputs: 100 services, each with its current config (which
// its spec.config names) and 100 earlier ones, orphaned at a commit the
// repository does not know and referenced by nothing. Each pass starts a
// server over a fresh repository; the transform's clock starts at the
// zero time, so that starting keeps them (the grace period is not over),
// and is moved past the grace period before the measured resync, from
// which the runtime is idle again with the 10,000 deleted (ms/pass, and
// the commits that took).
func BenchmarkCollect10000(b *testing.B) {
	const n, orphans = 100, 100
	store := &serverStore{}
	tr, err := cuelayers.New(benchConfig, store)
	if err != nil {
		b.Fatal(err)
	}
	// The current outputs, as the runtime writes them.
	srv := startQuiet(b, benchFiles(n))
	store.Store = srv.Server.ReconcileStore().(cuelayers.Store)
	rt, stop := runQuiet(b, srv, tr, nil)
	if err := rt.WaitIdle(b.Context()); err != nil {
		b.Fatal(err)
	}
	stop()
	files, err := srv.Repo.Files("main")
	if err != nil {
		b.Fatal(err)
	}
	orphanedAt := strings.Repeat("0123456789", 4)
	for p, data := range files {
		if !strings.HasPrefix(p, "configs/") {
			continue
		}
		cur := decodeResource(b, data)
		primary := cur.Metadata.Name[:strings.LastIndex(cur.Metadata.Name, "-")]
		for j := range orphans {
			o := cur.Clone()
			o.Metadata.Annotations[runtime.AnnotationOrphaned] = orphanedAt
			o.Spec = fmt.Appendf(nil, `{"data": {"image": "registry.example/%s:1.%d.0", "replicas": 2}}`, primary, j)
			o.Metadata.Name = cuelayers.OutputName(primary, o.Spec)
			body, err := json.MarshalIndent(o, "", "  ")
			if err != nil {
				b.Fatal(err)
			}
			files["configs/"+o.Metadata.Namespace+"/"+o.Metadata.Name+".json"] = body
		}
	}
	if got := len(files) - len(benchFiles(n)) - n; got != n*orphans {
		b.Fatalf("%d orphaned outputs, want %d", got, n*orphans)
	}
	var commits int
	for b.Loop() {
		b.StopTimer()
		srv := startQuiet(b, files)
		store.Store = srv.Server.ReconcileStore().(cuelayers.Store)
		clk := &clock{}
		tr.SetClock(clk.Now)
		rt, stop := runQuiet(b, srv, tr, nil)
		if err := rt.WaitIdle(b.Context()); err != nil {
			b.Fatal(err)
		}
		head := srv.Head(b)
		if head != srv.Initial {
			b.Fatalf("starting over orphaned outputs within their grace period made commit %.12s", head)
		}
		clk.add(2 * time.Hour)
		b.StartTimer()
		rt.Resync()
		if err := rt.WaitIdle(b.Context()); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := countAt(b, srv, configType); got != n {
			b.Fatalf("%d configs after collecting, want %d", got, n)
		}
		log, err := srv.Repo.Log("main")
		if err != nil {
			b.Fatal(err)
		}
		commits += slices.IndexFunc(log, func(c memsource.CommitInfo) bool { return c.ID == head })
		stop()
		b.StartTimer()
	}
	b.ReportMetric(n*orphans, "outputs")
	b.ReportMetric(ms(b.Elapsed())/float64(b.N), "ms/pass")
	b.ReportMetric(float64(commits)/float64(b.N), "commits/pass")
}

// startQuiet serves files with no demo and no logs.
func startQuiet(b *testing.B, files map[string][]byte) *servertest.Server {
	b.Helper()
	return servertest.Start(b, servertest.WithoutDemo(), servertest.WithFiles(files),
		servertest.WithServerOptions(server.WithLogger(slog.New(slog.DiscardHandler))))
}

// runQuiet runs the config reconciler with transform tr over srv, with
// no logs and metrics in reg (none when nil), until stop is called (at
// the latest, when the benchmark ends). Outputs are gathered for 100 ms
// into a commit, without a bound on commits per minute.
func runQuiet(b *testing.B, srv *servertest.Server, tr runtime.Transform, reg *prometheus.Registry) (*runtime.Runtime, func()) {
	b.Helper()
	rs := []*runtime.Reconciler{{
		Name: "config", For: appType, Watches: watches, Outputs: []runtime.Output{{Type: configType, Exclusive: true}},
		Transform: tr, UpdatesPrimary: true,
		Write: runtime.Write{Mode: runtime.WriteDirect, BatchWindow: 100 * time.Millisecond, MaxWritesPerMinute: 1 << 30},
	}}
	o := runtime.Options{Logger: slog.New(slog.DiscardHandler), Poll: 10 * time.Millisecond, Resync: -1, Timeout: 5 * time.Minute}
	if reg != nil {
		o.Metrics = runtime.NewMetrics(reg)
	}
	rt, err := runtime.New(srv.Server.ReconcileStore(), rs, o)
	if err != nil {
		b.Fatal(err)
	}
	srv.Server.SetReconcilers(rt)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	var stopped atomic.Bool
	stop := func() {
		if stopped.Swap(true) {
			return
		}
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
	b.Cleanup(stop)
	return rt, stop
}

// countAt is the number of resources of type t at the head.
func countAt(b *testing.B, srv *servertest.Server, t controller.Type) int {
	b.Helper()
	rs, err := srv.Server.ReconcileStore().List(b.Context(), srv.Head(b), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	return len(rs)
}

// counter sums the samples of a counter in reg.
func counter(b *testing.B, reg *prometheus.Registry, name string) float64 {
	b.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func p50(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
