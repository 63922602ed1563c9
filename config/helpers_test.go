package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/viper"
)

// testHost is the machine tests validate against: CPUs 0-3.
var testHost = HostWithCPUs(4)

// read loads a configuration from text against testHost with no environment.
func read(t testing.TB, text string, env ...string) (*Config, error) {
	t.Helper()
	vars := map[string]string{}
	for i := 0; i+1 < len(env); i += 2 {
		vars[env[i]] = env[i+1]
	}
	l := Loader{Host: &testHost, LookupEnv: func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}}
	return l.Read(strings.NewReader(text))
}

// mustRead is read of a configuration that must load.
func mustRead(t *testing.T, text string) *Config {
	t.Helper()
	c, err := read(t, text)
	if err != nil {
		t.Fatalf("unexpected error:\n%v", err)
	}
	return c
}

// fieldErrs returns the FieldErrors of err, failing the test if err is not a
// *ValidationError.
func fieldErrs(t *testing.T, err error) []FieldError {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *ValidationError", err, err)
	}
	return ve.Errors
}

// simPorts is two valid sim ports, each on its own wire.
const simPorts = `
ports:
  - {name: a, driver: sim, wire: "pair:a"}
  - {name: b, driver: sim, wire: "pair:b"}
`

// port0 returns simPorts with port a's fields set or overridden by key, value pairs
// (values are YAML).
func port0(kv ...string) string {
	fields := [][2]string{{"name", "a"}, {"driver", "sim"}, {"wire", `"pair:a"`}}
next:
	for i := 0; i+1 < len(kv); i += 2 {
		for j := range fields {
			if fields[j][0] == kv[i] {
				fields[j][1] = kv[i+1]
				continue next
			}
		}
		fields = append(fields, [2]string{kv[i], kv[i+1]})
	}
	var b strings.Builder
	b.WriteString("\nports:\n  - {")
	for i, f := range fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f[0] + ": " + f[1])
	}
	b.WriteString("}\n  - {name: b, driver: sim, wire: \"pair:b\"}\n")
	return b.String()
}

// wantOneError fails the test unless err is a *ValidationError with exactly one error,
// on path, whose text contains each of msgs.
func wantOneError(t *testing.T, err error, path string, msgs ...string) {
	t.Helper()
	errs := fieldErrs(t, err)
	if len(errs) != 1 || errs[0].Path != path {
		t.Fatalf("got %d errors, want 1 on %s:\n%v", len(errs), path, err)
	}
	for _, m := range msgs {
		if !strings.Contains(errs[0].Error(), m) {
			t.Errorf("got %q, want path %s and %q", errs[0].Error(), path, m)
		}
	}
}

// oneError is a document that must give exactly one error, on path, whose text contains
// msg.
type oneError struct{ name, text, path, msg string }

// wantOneErrors reads each document in a subtest and checks its one error (wantOneError).
func wantOneErrors(t *testing.T, tests []oneError) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.text)
			wantOneError(t, err, tt.path, tt.msg)
		})
	}
}

// shownKeys reads an example document into a viper of its own, to ask which keys it
// shows (IsSet, Get).
func shownKeys(t *testing.T, doc string) *viper.Viper {
	t.Helper()
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	return v
}
