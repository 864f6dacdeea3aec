package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
)

// envFlags registers flags that default to an environment variable. OLM users cannot edit the
// CSV's container arguments, only set variables (Subscription spec.config.env), so every setting an
// install needs has one. A flag given on the command line wins over its variable; an empty variable
// counts as unset.
type envFlags struct {
	fs      *flag.FlagSet
	envOf   map[string]string // flag name → variable
	invalid []envError        // variables whose value does not parse as their flag's type
}

// envError is a variable that does not parse; it matters only when its flag is not given.
type envError struct {
	flag, env, value string
	err              error
}

func newEnvFlags(fs *flag.FlagSet) *envFlags {
	return &envFlags{fs: fs, envOf: map[string]string{}}
}

func (e *envFlags) lookup(name, env string) (string, bool) {
	e.envOf[name] = env
	v := os.Getenv(env)
	return v, v != ""
}

func (e *envFlags) usage(usage, env string) string {
	return usage + " Environment: $" + env + "."
}

// String binds a string flag defaulting to $env, else def.
func (e *envFlags) String(p *string, name, env, def, usage string) {
	if v, ok := e.lookup(name, env); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, e.usage(usage, env))
}

// Float64 binds a float flag defaulting to $env, else def.
func (e *envFlags) Float64(p *float64, name, env string, def float64, usage string) {
	if v, ok := e.lookup(name, env); ok {
		if f, err := strconv.ParseFloat(v, 64); err != nil {
			e.invalid = append(e.invalid, envError{name, env, v, err})
		} else {
			def = f
		}
	}
	e.fs.Float64Var(p, name, def, e.usage(usage, env))
}

// Int binds an int flag defaulting to $env, else def.
func (e *envFlags) Int(p *int, name, env string, def int, usage string) {
	if v, ok := e.lookup(name, env); ok {
		if i, err := strconv.Atoi(v); err != nil {
			e.invalid = append(e.invalid, envError{name, env, v, err})
		} else {
			def = i
		}
	}
	e.fs.IntVar(p, name, def, e.usage(usage, env))
}

// Bool binds a bool flag defaulting to $env, else def.
func (e *envFlags) Bool(p *bool, name, env string, def bool, usage string) {
	if v, ok := e.lookup(name, env); ok {
		if b, err := strconv.ParseBool(v); err != nil {
			e.invalid = append(e.invalid, envError{name, env, v, err})
		} else {
			def = b
		}
	}
	e.fs.BoolVar(p, name, def, e.usage(usage, env))
}

// given reports whether the flag was set on the command line (after Parse).
func (e *envFlags) given(name string) bool {
	set := false
	e.fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// check reports the first variable that does not parse and whose flag was not given (after Parse).
func (e *envFlags) check() error {
	for _, bad := range e.invalid {
		if e.given(bad.flag) {
			continue
		}
		return fmt.Errorf("$%s=%q is not a valid value for --%s (%w): correct or unset the variable, or pass --%s, which wins over it",
			bad.env, bad.value, bad.flag, parseReason(bad.err), bad.flag)
	}
	return nil
}

// source says where a flag's value came from (after Parse): "--name=value", "$ENV=value" or the
// built-in default.
func (e *envFlags) source(name string) string {
	f := e.fs.Lookup(name)
	switch {
	case e.given(name):
		return fmt.Sprintf("--%s=%s", name, f.Value)
	case os.Getenv(e.envOf[name]) != "":
		return fmt.Sprintf("$%s=%s", e.envOf[name], f.Value)
	}
	return fmt.Sprintf("the default --%s=%s (neither the flag nor $%s is set)", name, f.Value, e.envOf[name])
}

// parseReason drops strconv's `strconv.ParseFloat: parsing "x": ` prefix, which repeats the value.
func parseReason(err error) error {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return ne.Err
	}
	return err
}
