package scm

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracerName names the package's tracer (the instrumentation scope).
const tracerName = "github.com/cup-dev/cup/scm"

// startSpan starts the client span of one call of r: "scm" and the
// method ("scm GET"), with the method, the host and the provider (when
// HTTPOptions.Metrics names one) as attributes, never the path or the
// query, which may hold what a log must not. The returned context, r's
// with the span, carries rate-limit waits as span events.
func (t *transport) startSpan(r *http.Request) (context.Context, trace.Span) {
	tp := t.opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", r.Method),
		attribute.String("server.address", r.URL.Hostname()),
	}
	if t.opts.Metrics != nil {
		attrs = append(attrs, attribute.String("cup.scm.provider", t.opts.Metrics.provider))
	}
	return tp.Tracer(tracerName).Start(r.Context(), "scm "+r.Method,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// endSpan ends span with the call's answer or error.
func endSpan(span trace.Span, res *http.Response, err error) {
	switch {
	case err != nil:
		span.SetStatus(codes.Error, "no answer")
	case res != nil:
		span.SetAttributes(attribute.Int("http.response.status_code", res.StatusCode))
		if res.StatusCode >= 500 {
			span.SetStatus(codes.Error, http.StatusText(res.StatusCode))
		}
	}
	span.End()
}

// spanWait records a rate-limit wait on the span of ctx.
func spanWait(ctx context.Context, reason string, d time.Duration) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent("rate-limit wait", trace.WithAttributes(
		attribute.String("reason", reason), attribute.String("wait", d.String())))
}
