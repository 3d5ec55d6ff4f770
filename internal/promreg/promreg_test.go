package promreg_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cup-dev/cup/internal/promreg"
)

func TestRegisterShares(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "shared_total", Help: "A counter two instances share."}
	first := prometheus.NewCounter(opts)
	second := prometheus.NewCounter(opts)
	if err := promreg.Register(reg, &first); err != nil {
		t.Fatal(err)
	}
	if err := promreg.Register(reg, &second); err != nil {
		t.Fatal(err)
	}
	if second != first {
		t.Error("the second registration did not take the registered collector")
	}
}

func TestRegisterConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := prometheus.NewCounter(prometheus.CounterOpts{Name: "clash", Help: "A counter."})
	gauge := prometheus.NewGauge(prometheus.GaugeOpts{Name: "clash", Help: "A gauge."})
	if err := promreg.Register(reg, &counter); err != nil {
		t.Fatal(err)
	}
	if err := promreg.Register(reg, &gauge); err == nil {
		t.Error("a gauge named like a registered counter registered")
	}
}

func TestRegisterNil(t *testing.T) {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "alone_total", Help: "A counter."})
	if err := promreg.Register(nil, &c); err != nil {
		t.Error(err)
	}
}
