package integration

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// unprivVF is what TestGuestToolUnprivileged printed in the VF guest ("E2E unpriv ..."
// lines): the last of each kind, and all of them.
type unprivVF struct {
	up, capEff, uid, exit, refused string
	lines                          []string
}

// parseUnprivVF reads the "E2E unpriv" lines of the guest's output.
func parseUnprivVF(out string) unprivVF {
	var u unprivVF
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		rest, ok := strings.CutPrefix(l, "E2E unpriv ")
		if !ok {
			continue
		}
		u.lines = append(u.lines, l)
		switch {
		case strings.HasPrefix(rest, "up "):
			u.up = rest
		case strings.HasPrefix(rest, "refused "):
			u.refused = rest
		case strings.HasPrefix(rest, "exit="):
			u.exit = strings.TrimPrefix(rest, "exit=")
		case strings.Contains(rest, " CapEff: "):
			u.capEff = rest[strings.Index(rest, "CapEff: ")+len("CapEff: "):]
		case strings.Contains(rest, " Uid: "):
			u.uid = rest[strings.Index(rest, "Uid: ")+len("Uid: "):]
		}
	}
	return u
}

// unprivUp matches the line of a daemon up as uid 1000: its memlock and the need.
var unprivUp = regexp.MustCompile(`^up uid=1000 pid=\d+ memlock=(\d+) need=(\d+)$`)

// problems says what in u falls short of a run as uid 1000 with CapEff 0, up with the
// memlock `config validate` printed (or twice it) after half of it was refused for
// RLIMIT_MEMLOCK, and exiting 0 on SIGTERM; none when nothing does.
func (u unprivVF) problems() []string {
	m := unprivUp.FindStringSubmatch(u.up)
	if m == nil {
		return []string{fmt.Sprintf("no \"E2E unpriv up uid=1000\" line (got %q)", u.up)}
	}
	var p []string
	limit, _ := strconv.ParseUint(m[1], 10, 64)
	need, _ := strconv.ParseUint(m[2], 10, 64)
	if limit != need && limit != 2*need {
		p = append(p, fmt.Sprintf("up with RLIMIT_MEMLOCK %d, not the %d config validate printed nor twice it", limit, need))
	}
	if !strings.HasPrefix(u.refused, fmt.Sprintf("refused memlock=%d: ", need/2)) || !strings.Contains(u.refused, "RLIMIT_MEMLOCK") {
		p = append(p, fmt.Sprintf("no line says the run with half of %d bytes was refused for RLIMIT_MEMLOCK (got %q)", need, u.refused))
	}
	if u.capEff != "0000000000000000" {
		p = append(p, fmt.Sprintf("CapEff %q, want 0000000000000000", u.capEff))
	}
	if f := strings.Fields(u.uid); len(f) != 4 || f[0] != "1000" || f[1] != "1000" || f[2] != "1000" || f[3] != "1000" {
		p = append(p, fmt.Sprintf("Uid: line %q, want 1000 four times", u.uid))
	}
	if u.exit != "<nil>" {
		p = append(p, fmt.Sprintf("exit after SIGTERM %q, want <nil>", u.exit))
	}
	return p
}

// checkUnprivVF checks the unprivileged step of TestIntegrationIGBVF: the guest's output
// (problems of parseUnprivVF) and that every one of the probes r came back.
func checkUnprivVF(t *testing.T, out string, r *latencyRun) {
	t.Helper()
	u := parseUnprivVF(out)
	for _, l := range u.lines {
		t.Log(l)
	}
	for _, p := range u.problems() {
		t.Error("the unprivileged daemon: " + p)
	}
	t.Logf("Uid: %s, CapEff: %s; %s", u.uid, u.capEff, u.up)
	if r == nil {
		t.Fatal("no probes were sent through the unprivileged daemon")
	}
	checkProbes(t, r)
}

// TestUnprivVFProblems feeds problems the lines of a good run and of runs each short of
// one thing.
func TestUnprivVFProblems(t *testing.T) {
	const (
		uid     = "E2E unpriv pid=621 Uid: 1000 1000 1000 1000\n"
		capEff  = "E2E unpriv pid=621 CapEff: 0000000000000000\n"
		refused = "E2E unpriv refused memlock=10485760: Error: ports need 20 MiB locked, RLIMIT_MEMLOCK is 10 MiB\n"
		up      = "E2E unpriv up uid=1000 pid=621 memlock=20971520 need=20971520\n"
		exit    = "E2E unpriv exit=<nil>\n"
	)
	for _, tc := range []struct {
		name, out, want string
	}{
		{"good", uid + capEff + refused + up + exit, ""},
		{"twice the need", uid + capEff + refused + strings.Replace(up, "memlock=20971520", "memlock=41943040", 1) + exit, ""},
		{"not up", uid + capEff + refused + exit, "no \"E2E unpriv up"},
		{"root", strings.Replace(uid, " 1000 1000 1000 1000", " 0 0 0 0", 1) + capEff + refused + up + exit, "Uid: line"},
		{"capabilities", uid + "E2E unpriv pid=621 CapEff: 000001ffffffffff\n" + refused + up + exit, "CapEff"},
		{"half not refused", uid + capEff + up + exit, "half of 20971520"},
		{"another limit", uid + capEff + refused + strings.Replace(up, "memlock=20971520", "memlock=30000000", 1) + exit, "RLIMIT_MEMLOCK 30000000"},
		{"exit status", uid + capEff + refused + up + "E2E unpriv exit=exit status 1\n", "exit after SIGTERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(parseUnprivVF(tc.out).problems(), "; ")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("problems %q, want one containing %q", got, tc.want)
			}
		})
	}
}
