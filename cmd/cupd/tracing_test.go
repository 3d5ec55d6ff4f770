package main

import (
	"strings"
	"testing"
)

func TestTracingWanted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env     string // space-separated KEY=VALUE
		want    bool
		wantErr string
	}{
		{env: "", want: false},
		{env: "OTEL_TRACES_EXPORTER=otlp", want: true},
		{env: "OTEL_TRACES_EXPORTER=none", want: false},
		{env: "OTEL_TRACES_EXPORTER=none,otlp", want: true},
		{env: "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318", want: true},
		{env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://collector:4318/v1/traces", want: true},
		{env: "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318 OTEL_TRACES_EXPORTER=none", want: false},
		{env: "OTEL_TRACES_EXPORTER=otlp OTEL_SDK_DISABLED=true", want: false},
		{env: "OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", want: true},
		{env: "OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=http/json", want: true},
		{env: "OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=grpc", wantErr: `not "grpc"`},
		{env: "OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_PROTOCOL=grpc OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf", want: true},
		{env: "OTEL_TRACES_EXPORTER=zipkin", wantErr: `not "zipkin"`},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			for kv := range strings.FieldsSeq(tt.env) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			got, err := tracingWanted(func(k string) string { return env[k] })
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %s", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tt.want:
				t.Fatalf("tracingWanted = %v, want %v", got, tt.want)
			}
		})
	}
}
