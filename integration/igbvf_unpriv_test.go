package integration

import (
	"regexp"
	"strings"
	"testing"
)

// checkUnprivVF checks the unprivileged step of TestIntegrationIGBVF in the guest's
// output: the daemon ran as uid 1000 with CapEff 0 (TestGuestToolUnprivileged's
// "E2E unpriv" lines), came up with the memlock `config validate` printed (or twice it,
// half refused), exited 0 on SIGTERM, and every one of the probes r came back.
func checkUnprivVF(t *testing.T, out string, r *latencyRun) {
	t.Helper()
	var up, capEff, uid, exit string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "E2E unpriv ")
		if !ok {
			continue
		}
		t.Log(l)
		switch {
		case strings.HasPrefix(rest, "up "):
			up = rest
		case strings.Contains(rest, " CapEff: "):
			capEff = rest[strings.Index(rest, "CapEff: ")+len("CapEff: "):]
		case strings.Contains(rest, " Uid: "):
			uid = rest[strings.Index(rest, "Uid: ")+len("Uid: "):]
		case strings.HasPrefix(rest, "exit="):
			exit = strings.TrimPrefix(rest, "exit=")
		}
	}
	m := regexp.MustCompile(`^up uid=1000 pid=\d+ memlock=(\d+) need=(\d+) half-refused=yes$`).FindStringSubmatch(up)
	if m == nil {
		t.Fatalf("the guest printed no \"E2E unpriv up\" line for uid 1000 (got %q)", up)
	}
	if capEff != "0000000000000000" {
		t.Errorf("the unprivileged daemon's CapEff is %q, want 0000000000000000", capEff)
	}
	if f := strings.Fields(uid); len(f) != 4 || f[0] != "1000" || f[1] != "1000" || f[2] != "1000" || f[3] != "1000" {
		t.Errorf("the unprivileged daemon's Uid: line is %q, want 1000 four times", uid)
	}
	t.Logf("uid %s, CapEff %s, RLIMIT_MEMLOCK %s bytes (config validate: %s)", strings.Fields(uid + " ?")[0], capEff, m[1], m[2])
	if r == nil {
		t.Fatal("no probes were sent through the unprivileged daemon")
	}
	checkProbes(t, r)
	if exit != "<nil>" {
		t.Errorf("the unprivileged daemon's exit after SIGTERM: %q, want <nil>", exit)
	}
}
