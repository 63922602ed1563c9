package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestEnvOverrides(t *testing.T) {
	stateDir := filepath.Join(t.TempDir(), "uiod") // not /tmp/uiod: anything may be there
	c, err := read(t, simPorts+"poll: {mode: busy}\nmetrics: {listen: \"127.0.0.1:1\"}",
		"UIOD_POLL_MODE", "adaptive",
		"UIOD_POLL_IDLE_THRESHOLD", "auto",
		"UIOD_POLL_WAIT_TIMEOUT", "5ms",
		"UIOD_POLL_HOUSEKEEPING_HZ", "100",
		"UIOD_POLL_HOUSEKEEPING_LENGTH", "10us",
		"UIOD_POLL_CPUS", "1-2",
		"UIOD_METRICS_LISTEN", "",
		"UIOD_LOG_LEVEL", "debug",
		"UIOD_STATE_DIR", stateDir,
		"UIOD_POWER_CPU_DMA_LATENCY", "0",
		"UIOD_FORWARD_MODE", "reflect",
		"UIOD_PORTS", "nonsense", // lists of mappings are not overridable
	)
	if err != nil {
		t.Fatal(err)
	}
	_, auto := c.IdleThreshold()
	switch {
	case c.Poll.Mode != PollAdaptive, !auto, c.Poll.WaitTimeout != 5*time.Millisecond,
		c.Poll.Housekeeping != Housekeeping{Hz: 100, Length: 10 * time.Microsecond},
		!reflect.DeepEqual(c.Poll.CPUs, []int{1, 2}), c.MetricsEnabled(), c.Log.Level != "debug",
		c.StateDir != stateDir, c.Power.CPUDMALatency != 0, c.Forward.Mode != ForwardReflect:
		t.Errorf("overrides not applied: %+v", c)
	}

	_, err = read(t, simPorts, "UIOD_POLL_HOUSEKEEPING_HZ", "often", "UIOD_POLL_MODE", "nap", "UIOD_POLL_CPUS", "0,9")
	var got []string
	for _, fe := range fieldErrs(t, err) {
		got = append(got, fe.Error())
	}
	want := []string{
		`poll.mode = "nap": want busy, adaptive or sleep (from $UIOD_POLL_MODE)`,
		`poll.housekeeping.hz = "often": want an integer (from $UIOD_POLL_HOUSEKEEPING_HZ)`,
		`poll.cpus[1] = 9: no such CPU here (have 0-3) (from $UIOD_POLL_CPUS)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("bad overrides reported as\n%q\nwant\n%q", got, want)
	}
}

// TestEnvValuesChecked checks that a value from the environment is checked like one from
// the file, whatever the mode, and that the error names the variable.
func TestEnvValuesChecked(t *testing.T) {
	_, err := read(t, simPorts+"poll: {mode: adaptive}", "UIOD_POLL_SLEEP_MIN", "1ms")
	errs := fieldErrs(t, err)
	if len(errs) != 1 || errs[0].Error() != "poll.sleep_min = 1ms: must be less than poll.sleep_max (200µs) (from $UIOD_POLL_SLEEP_MIN)" {
		t.Errorf("errors %q", err)
	}
	if errors.Unwrap(errs[0]) == nil {
		t.Errorf("the idle policy's own error is not behind %v", errs[0])
	}
}

func TestEnvFromProcess(t *testing.T) {
	t.Setenv("UIOD_POLL_MODE", "busy")
	f := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(f, []byte(simPorts), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Mode != PollBusy {
		t.Errorf("poll.mode = %s, want busy from UIOD_POLL_MODE", c.Poll.Mode)
	}
}

func TestEnvKeys(t *testing.T) {
	want := []string{"log.level", "log.format", "metrics.listen", "metrics.public", "state_dir", "capture.group", "forward.mode", "forward.routes_from", "forward.kernel_table",
		"forward.max_routes", "forward.max_routes6", "bridge.ageing", "bridge.table_size", "bridge.mac_limit", "bridge.flood_limit", "poll.mode", "poll.idle_threshold", "poll.wait_timeout", "poll.sleep_min", "poll.sleep_max",
		"poll.housekeeping.hz", "poll.housekeeping.length", "poll.cpus", "poll.delivery",
		"power.cpu_dma_latency", "vfio.interface", "memory.dma_limit", "memory.model_limit"}
	if !reflect.DeepEqual(envKeys, want) {
		t.Errorf("envKeys = %q\nwant %q", envKeys, want)
	}
	if got := envName("poll.housekeeping.hz"); got != "UIOD_POLL_HOUSEKEEPING_HZ" {
		t.Errorf("envName = %s", got)
	}
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	var ve *ValidationError
	if err == nil || errors.As(err, &ve) || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing file: %v", err)
	}
	for _, text := range []string{"ports: [", "- a\n- b", "a: b: c", "\t x"} {
		_, err := read(t, text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v (%T), want *ParseError", text, err, err)
		}
	}
}

func TestLoadStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdin
	os.Stdin = r
	defer func() { os.Stdin = old; r.Close() }()
	go func() { w.WriteString(simPorts + "poll: {mode: busy}"); w.Close() }()
	c, err := Loader{Host: &testHost}.Load("-")
	if err != nil {
		t.Fatal(err)
	}
	if c.Poll.Mode != PollBusy || len(c.Ports) != 2 {
		t.Errorf("stdin config not read: %+v", c)
	}
}
