package wasm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cup-dev/cup/controller/wasm"
)

func TestParseSpec(t *testing.T) {
	t.Parallel()
	defaults := wasm.Spec{Path: "m.wasm", MemoryLimitPages: 256, Timeout: 10 * time.Second, MaxOutputBytes: 16 << 20}
	tests := []struct {
		name, raw string
		want      wasm.Spec
		err       string // part of the error; "" for none
	}{
		{"path only", `{"path": "m.wasm"}`, defaults, ""},
		{"everything", `{"path": "m.wasm", "memoryLimitPages": 512, "timeout": "1m30s", "maxOutputBytes": 1024}`,
			wasm.Spec{Path: "m.wasm", MemoryLimitPages: 512, Timeout: 90 * time.Second, MaxOutputBytes: 1024}, ""},
		{"get costs a list", `{"path": "m.wasm", "getCostsList": true}`,
			wasm.Spec{Path: "m.wasm", MemoryLimitPages: 256, Timeout: 10 * time.Second, MaxOutputBytes: 16 << 20, GetCostsList: true}, ""},
		{"nulls are defaults", `{"path": "m.wasm", "memoryLimitPages": null, "timeout": null, "maxOutputBytes": null, "getCostsList": null}`, defaults, ""},
		{"largest memory", `{"path": "m.wasm", "memoryLimitPages": 65535}`,
			wasm.Spec{Path: "m.wasm", MemoryLimitPages: 65535, Timeout: 10 * time.Second, MaxOutputBytes: 16 << 20}, ""},
		{"empty", ``, wasm.Spec{}, `field "path" is required`},
		{"null", `null`, wasm.Spec{}, "want a JSON object"},
		{"no path", `{"timeout": "5s"}`, wasm.Spec{}, `field "path" is required`},
		{"empty path", `{"path": ""}`, wasm.Spec{}, `field "path" is required`},
		{"path not a string", `{"path": 1}`, wasm.Spec{}, `field "path": want a string, got a number`},
		{"unknown field", `{"path": "m.wasm", "memory": 1}`, wasm.Spec{}, `field "memory": unknown field`},
		{"type is not ours", `{"type": "wasm", "path": "m.wasm"}`, wasm.Spec{}, `field "type": unknown field`},
		{"repeated field", `{"path": "a", "path": "b"}`, wasm.Spec{}, `field "path" given twice`},
		{"zero memory", `{"path": "m.wasm", "memoryLimitPages": 0}`, wasm.Spec{}, `field "memoryLimitPages": want the number of 64 KiB pages, from 1 to 65535: got 0`},
		{"negative memory", `{"path": "m.wasm", "memoryLimitPages": -1}`, wasm.Spec{}, `field "memoryLimitPages"`},
		{"too much memory", `{"path": "m.wasm", "memoryLimitPages": 65536}`, wasm.Spec{}, `field "memoryLimitPages"`},
		{"fractional memory", `{"path": "m.wasm", "memoryLimitPages": 1.5}`, wasm.Spec{}, `got 1.5`},
		{"memory as a string", `{"path": "m.wasm", "memoryLimitPages": "256"}`, wasm.Spec{}, `field "memoryLimitPages": want the number of 64 KiB pages, from 1 to 65535: got a string`},
		{"timeout as a number", `{"path": "m.wasm", "timeout": 5}`, wasm.Spec{}, `field "timeout": want a duration string such as "5s", got a number`},
		{"bad timeout", `{"path": "m.wasm", "timeout": "5 seconds"}`, wasm.Spec{}, `field "timeout": want a duration string such as "5s": time: unknown unit`},
		{"zero timeout", `{"path": "m.wasm", "timeout": "0s"}`, wasm.Spec{}, `field "timeout": want a positive duration, got "0s"`},
		{"negative timeout", `{"path": "m.wasm", "timeout": "-1s"}`, wasm.Spec{}, `field "timeout": want a positive duration`},
		{"zero output", `{"path": "m.wasm", "maxOutputBytes": 0}`, wasm.Spec{}, `field "maxOutputBytes": want a number of bytes of at least 1: got 0`},
		{"output as a bool", `{"path": "m.wasm", "maxOutputBytes": true}`, wasm.Spec{}, `got a boolean`},
		{"get costs a list as a string", `{"path": "m.wasm", "getCostsList": "yes"}`, wasm.Spec{}, `field "getCostsList": want true or false, got a string`},
		{"an array", `[]`, wasm.Spec{}, "want a JSON object"},
		{"trailing data", `{"path": "m.wasm"} {}`, wasm.Spec{}, "unexpected data after the object"},
		{"broken", `{"path": "m.wasm"`, wasm.Spec{}, "wasm spec:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := wasm.ParseSpec([]byte(tt.raw))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseSpec = %+v, %v; want an error saying %q", got, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpec: %v", err)
			}
			if *got != tt.want {
				t.Errorf("ParseSpec = %+v, want %+v", *got, tt.want)
			}
		})
	}
}
