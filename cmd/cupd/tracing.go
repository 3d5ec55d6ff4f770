package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// startTracing sets up OpenTelemetry tracing as the standard OTEL_*
// environment variables ask, and returns what flushes and stops it.
//
// Tracing is off unless OTEL_TRACES_EXPORTER names otlp, or is unset while
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_SDK_DISABLED=true turns it off whatever else is set. Spans go out
// over OTLP/HTTP (OTEL_EXPORTER_OTLP_PROTOCOL http/protobuf, the default,
// or http/json; grpc is refused), configured by the exporter's own
// variables (endpoint, headers, timeout, compression, certificates), in
// batches (OTEL_BSP_*), sampled as OTEL_TRACES_SAMPLER says (default:
// every trace, or as the caller's traceparent decided). The resource is
// service.name "cupd" unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES
// say otherwise. Calls carrying a W3C traceparent continue the caller's
// trace.
//
// When tracing is on, startTracing returns the tracer provider for the
// server, the WASM controllers and the SCM clients, and sets it and the
// W3C propagators as the global ones too; when off, tp is nil.
func startTracing(ctx context.Context, logger *slog.Logger) (tp trace.TracerProvider, shutdown func(context.Context) error, err error) {
	off := func(context.Context) error { return nil }
	if on, err := tracingWanted(os.Getenv); err != nil || !on {
		return nil, off, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, off, fmt.Errorf("OTEL_*: the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "cupd")),
		resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, off, errors.Join(fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err), exp.Shutdown(ctx))
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(sdk)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("exporting traces", "error", err)
	}))
	endpoint := cmpEnv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318")
	if u, err := url.Parse(endpoint); err == nil {
		u.User = nil // credentials never reach the log
		endpoint = u.Redacted()
	}
	logger.Info("exporting traces over OTLP/HTTP", "endpoint", endpoint)
	return sdk, sdk.Shutdown, nil
}

// tracingFlushTimeout bounds the wait for the last spans at shutdown.
const tracingFlushTimeout = 5 * time.Second

// stopTracing flushes the spans not yet sent and stops the exporter,
// waiting at most tracingFlushTimeout.
func stopTracing(shutdown func(context.Context) error, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlushTimeout)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		logger.Warn("flushing traces", "error", err)
	}
}

// tracingWanted reports whether the OTEL_* variables getenv reads ask for
// traces, and fails when they ask for an exporter or protocol cupd lacks.
func tracingWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	exporters := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	if exporters == "" {
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return false, nil
		}
		exporters = "otlp"
	}
	on := false
	for e := range strings.SplitSeq(exporters, ",") {
		switch e = strings.TrimSpace(e); e {
		case "otlp":
			on = true
		case "none", "":
		default:
			return false, fmt.Errorf("OTEL_TRACES_EXPORTER: cupd exports traces with otlp (or none), not %q", e)
		}
	}
	if !on {
		return false, nil
	}
	protocol := cmpEnvWith(getenv, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	if protocol != "http/protobuf" && protocol != "http/json" {
		return false, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: cupd exports traces over http/protobuf or http/json, not %q", protocol)
	}
	return true, nil
}

// cmpEnv is the first of the variables a and b that is set, or def.
func cmpEnv(a, b, def string) string { return cmpEnvWith(os.Getenv, a, b, def) }

func cmpEnvWith(getenv func(string) string, a, b, def string) string {
	for _, k := range []string{a, b} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
	}
	return def
}
