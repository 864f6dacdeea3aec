package main

import (
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	uberzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// lazyCore defers a logger's With fields until the logger writes something. controller-runtime
// derives a logger for every reconcile (controller, object, reconcile ID: three With calls), and
// zap encodes each With's fields into a new buffer at once; most reconciles log nothing, so at
// 5,000 pods that encoding was ~8 % of all bytes the manager allocated (`make bench-scale`'s heap
// profile, docs/scale.md). Here With only collects the fields; the first entry the level lets
// through encodes them, once per derived logger. What is written is unchanged.
type lazyCore struct {
	base   zapcore.Core
	fields []zapcore.Field

	once sync.Once
	core zapcore.Core // base.With(fields), built on first use
}

// newLazyCore wraps core (zap.WrapCore).
func newLazyCore(core zapcore.Core) zapcore.Core { return &lazyCore{base: core} }

func (c *lazyCore) materialized() zapcore.Core {
	c.once.Do(func() {
		c.core = c.base
		if len(c.fields) > 0 {
			c.core = c.base.With(c.fields)
		}
	})
	return c.core
}

// With returns a core holding this one's fields and fields, encoding none of them.
func (c *lazyCore) With(fields []zapcore.Field) zapcore.Core {
	if len(fields) == 0 {
		return c
	}
	all := make([]zapcore.Field, 0, len(c.fields)+len(fields))
	return &lazyCore{base: c.base, fields: append(append(all, c.fields...), fields...)}
}

// Enabled is the base core's level check (With never changes the level).
func (c *lazyCore) Enabled(l zapcore.Level) bool { return c.base.Enabled(l) }

// Check encodes the fields only for an entry the level lets through.
func (c *lazyCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if !c.base.Enabled(e.Level) {
		return ce
	}
	return c.materialized().Check(e, ce)
}

func (c *lazyCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	return c.materialized().Write(e, fields)
}

func (c *lazyCore) Sync() error { return c.base.Sync() }

// newLogger is controller-runtime's zap logger for the flags' options, its core wrapped in
// lazyCore outermost (over the sampler), so that deriving a logger costs no encoding.
func newLogger(opts *zap.Options) logr.Logger {
	return zapr.NewLogger(zap.NewRaw(zap.UseFlagOptions(opts)).WithOptions(uberzap.WrapCore(newLazyCore)))
}
