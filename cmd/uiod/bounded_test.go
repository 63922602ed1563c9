package main

import (
	"strings"
	"testing"
)

// TestBoundedEcho: whatever a 100 KB piece of input is — an argument, a flag's value, a
// path, an environment variable, a configuration value or key — the error that names
// it quotes a bounded prefix and its length, and the command fails as it would with a
// short bad input.
func TestBoundedEcho(t *testing.T) {
	long := strings.Repeat("a", 100<<10)
	spaced := strings.Repeat("a a ", 25<<10) // no word is long: only the whole is
	cfg := func(extra string) string {
		return "ports:\n  - {name: a, driver: sim, wire: \"pair:a\"}\nforward: {mode: reflect}\n" + extra
	}
	tests := []struct {
		name  string
		args  []string
		env   []string
		stdin string
	}{
		{"unknown command", []string{long}, nil, ""},
		{"unknown subcommand word", []string{"devices", long}, nil, ""},
		{"unknown flag", []string{"status", "--" + long}, nil, ""},
		{"flag value", []string{"status", "--interval", long}, nil, ""},
		{"flag=value", []string{"status", "--interval=" + spaced}, nil, ""},
		{"log level", []string{"--log-level", spaced, "devices"}, nil, ""},
		{"log format", []string{"--log-format", long, "devices"}, nil, ""},
		{"root", []string{"--root", "/tmp/" + long, "devices"}, nil, ""},
		{"root from the environment", []string{"devices"}, []string{"UIOD_ROOT=/tmp/" + long}, ""},
		{"PCI address", []string{"bind", "--driver", "vfio-pci", long}, nil, ""},
		{"driver name", []string{"bind", "--driver", long, "0000:01:00.0"}, nil, ""},
		{"unbind address", []string{"unbind", long}, nil, ""},
		{"quiesce address", []string{"quiesce", long}, nil, ""},
		{"config path", []string{"run", "--config", "/tmp/" + long}, nil, ""},
		{"validate path", []string{"config", "validate", long}, nil, ""},
		{"status address", []string{"status", "--metrics", "ftp://" + long}, nil, ""},
		{"latency nic", []string{"latency", "--sim", "--nic", long}, nil, ""},
		{"latency policies", []string{"latency", "--sim", "--policies", "busy," + long}, nil, ""},
		{"latency wire", []string{"latency", "--tx", "unix:/tmp/" + long + ",/tmp/b"}, nil, ""},
		{"latency pair name", []string{"latency", "--tx", "pair:" + long}, nil, ""},
		{"config pair name", []string{"config", "validate", "-"}, nil, strings.Replace(cfg(""), "pair:a", "pair:"+long, 1)},
		{"man dir", []string{"man", "/tmp/" + long}, nil, ""},
		{"SOURCE_DATE_EPOCH", []string{"man", t.TempDir()}, []string{"SOURCE_DATE_EPOCH=" + long}, ""},
		{"config value", []string{"config", "validate", "-"}, nil, cfg("log: {level: \"" + spaced + "\"}\n")},
		{"config port name", []string{"config", "validate", "-"}, nil, strings.Replace(cfg(""), "name: a", "name: "+long, 1)},
		{"config socket", []string{"config", "validate", "-"}, nil, strings.Replace(cfg(""), "pair:a", "unix:/tmp/"+long+",/tmp/b", 1)},
		{"config key", []string{"config", "validate", "-"}, nil, cfg("x" + strings.Repeat("k", 1000) + ": 1\n")},
		{"config state_dir", []string{"run", "--config", "-"}, nil, cfg("state_dir: /srv/" + long + "\n")},
		{"environment value", []string{"config", "validate", "-"}, []string{"UIOD_POLL_CPUS=1-" + long}, cfg("")},
		{"environment listen", []string{"run", "--config", "-"}, []string{"UIOD_METRICS_LISTEN=127.0.0.1:" + long}, cfg("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runUIOD(t, tt.stdin, tt.env, tt.args...)
			if code == 0 {
				t.Fatalf("exit 0; stdout %.200q", stdout)
			}
			if len(stderr) > 2048 || len(stdout) > 2048 {
				t.Errorf("%d bytes on stderr, %d on stdout: %.300q…", len(stderr), len(stdout), stderr)
			}
			if !strings.Contains(stderr, " bytes)") {
				t.Errorf("stderr does not say how long the input was: %.300q", stderr)
			}
		})
	}
}

func TestBoundMessage(t *testing.T) {
	long := strings.Repeat("b", 1000)
	spaced := strings.Repeat("c ", 500)
	tests := []struct {
		name, msg string
		args, env []string
		want      string
	}{
		{"quoted argument", `invalid argument "` + long + `" for "--x" flag`, []string{"--x", long}, nil,
			`invalid argument "` + long[:64] + `"…(1000 bytes) for "--x" flag`},
		{"flag=value with blanks", "level: " + spaced + " unknown", []string{"--level=" + spaced}, nil,
			"level: " + spaced[:64] + "…(1000 bytes) unknown"},
		{"environment", "open /x/" + spaced + ": denied", nil, []string{"HOME=/root", "UIOD_ROOT=/x/" + spaced},
			"open /x/" + spaced[:61] + "…(1003 bytes): denied"},
		{"short input kept", "unknown command \"devics\"", []string{"devics"}, nil, "unknown command \"devics\""},
		{"a long word of no input", "stat /" + long + ": too long", nil, nil, "stat /" + long[:63] + "…(1002 bytes) too long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := boundMessage(tt.msg, tt.args, tt.env); got != tt.want {
				t.Errorf("boundMessage = %q\nwant %q", got, tt.want)
			}
		})
	}
}
