package config

import (
	"strings"
	"testing"
)

// TestBoundedValues: an error about a 100 KB value, key or environment variable quotes a
// bounded prefix of it and its length, for a library caller as for the CLI.
func TestBoundedValues(t *testing.T) {
	long := strings.Repeat("v", 100<<10)
	tests := []struct {
		name, text string
		env        []string
	}{
		{"log level", simPorts + "log: {level: " + long + "}", nil},
		{"port name", port0("name", long), nil},
		{"pci", port0("pci", long), nil},
		{"unix socket", port0("wire", "\"unix:/tmp/"+long+",/tmp/b\""), nil},
		{"tap name", port0("wire", "tap:"+long), nil},
		{"pair name in forward.pairs", simPorts + "forward: {pairs: [[a, " + long + "]]}", nil},
		{"metrics port", simPorts + "metrics: {listen: \"127.0.0.1:" + long + "\"}", nil},
		{"state_dir", simPorts + "state_dir: /" + long, nil},
		{"key", simPorts + strings.Repeat("k", 1000) + ": 1", nil},
		{"environment CPU list", simPorts, []string{"UIOD_POLL_CPUS", "0," + long}},
		{"environment size", simPorts, []string{"UIOD_MEMORY_DMA_LIMIT", long}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := read(t, tt.text, tt.env...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if len(line) > 512 {
					t.Errorf("a %d-byte line: %.200q…", len(line), line)
				}
			}
			if !strings.Contains(err.Error(), " bytes)") {
				t.Errorf("error does not give the input's length: %.300q", err)
			}
		})
	}
}
