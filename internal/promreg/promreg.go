// Package promreg registers Prometheus collectors that several instances
// share, such as the metrics of two Git sources or two SCM providers in
// one process.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers *c with reg, or when a collector of the same
// description is registered already, as by another instance, sets *c to
// that one. A nil reg registers nothing.
func Register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	if reg == nil {
		return nil
	}
	err := reg.Register(*c)
	if err == nil {
		return nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			*c = existing
			return nil
		}
	}
	return err
}
