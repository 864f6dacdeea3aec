package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// countingCore counts the With calls that reach it (each one encodes the fields in zap's cores).
type countingCore struct {
	zapcore.Core
	withs *int
}

func (c countingCore) With(fields []zapcore.Field) zapcore.Core {
	*c.withs++
	return countingCore{Core: c.Core.With(fields), withs: c.withs}
}

func (c countingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func TestLazyCoreEncodesFieldsOnlyWhenWriting(t *testing.T) {
	var buf bytes.Buffer
	withs := 0
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{MessageKey: "msg"})
	base := countingCore{Core: zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.InfoLevel), withs: &withs}
	core := newLazyCore(base)

	// A reconcile's derived logger: three With calls, then (mostly) nothing logged.
	quiet := core.With([]zapcore.Field{{Key: "controller", Type: zapcore.StringType, String: "nodeclaim"}}).
		With([]zapcore.Field{{Key: "name", Type: zapcore.StringType, String: "a"}}).
		With([]zapcore.Field{{Key: "reconcileID", Type: zapcore.StringType, String: "1"}})
	if ce := quiet.Check(zapcore.Entry{Level: zapcore.DebugLevel, Message: "debug"}, nil); ce != nil {
		t.Fatal("a debug entry passed an info-level core")
	}
	if withs != 0 {
		t.Fatalf("With reached the encoding core %d times before anything was written, want 0", withs)
	}

	loud := core.With([]zapcore.Field{{Key: "controller", Type: zapcore.StringType, String: "nodeclaim"}}).
		With([]zapcore.Field{{Key: "name", Type: zapcore.StringType, String: "b"}})
	for range 2 {
		if ce := loud.Check(zapcore.Entry{Level: zapcore.InfoLevel, Message: "launched"}, nil); ce != nil {
			ce.Write(zapcore.Field{Key: "id", Type: zapcore.StringType, String: "i-1"})
		}
	}
	if withs != 1 {
		t.Fatalf("With reached the encoding core %d times for one derived logger that wrote twice, want 1", withs)
	}
	want := `{"msg":"launched","controller":"nodeclaim","name":"b","id":"i-1"}`
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || lines[0] != want || lines[1] != want {
		t.Fatalf("written:\n%s\nwant twice:\n%s", buf.String(), want)
	}
}

func TestNewLoggerWritesDerivedFields(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(&zap.Options{DestWriter: &buf})
	log.WithValues("controller", "nodeclaim").WithValues("reconcileID", "r1").Info("launched", "nodeClaim", "x")
	log.V(1).WithValues("ignored", "yes").Info("debug line")
	out := buf.String()
	for _, s := range []string{`"controller":"nodeclaim"`, `"reconcileID":"r1"`, `"nodeClaim":"x"`, `"msg":"launched"`} {
		if !strings.Contains(out, s) {
			t.Errorf("log line %q lacks %s", out, s)
		}
	}
	if strings.Contains(out, "debug line") || strings.Count(out, "\n") != 1 {
		t.Errorf("want one info line, got %q", out)
	}
}
