package guest

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestParseUnitShipped: the shipped unit reads as the start/stop path the guest test runs.
func TestParseUnitShipped(t *testing.T) {
	f, err := os.Open("../../contrib/uiod.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, err := parseUnit(f)
	if err != nil {
		t.Fatal(err)
	}
	subs := func(l []execLine) []string {
		var s []string
		for _, e := range l {
			s = append(s, e.subcommand())
		}
		return s
	}
	if got := subs(u.StartPre); !reflect.DeepEqual(got, []string{"config", "bind"}) {
		t.Errorf("ExecStartPre subcommands %q", got)
	}
	if len(u.Start) != 1 || u.Start[0].subcommand() != "run" || u.Start[0].configArg() != "/etc/uiod/uiod.yaml" {
		t.Errorf("ExecStart %+v", u.Start)
	}
	if got := subs(u.StopPost); !reflect.DeepEqual(got, []string{"quiesce", "unbind"}) {
		t.Errorf("ExecStopPost subcommands %q", got)
	}
	if !u.StopPost[0].Privileged || u.StopPost[0].IgnoreFailure {
		t.Errorf("ExecStopPost[0] prefixes: %+v", u.StopPost[0])
	}
	if u.KillSignal != "SIGTERM" || !reflect.DeepEqual(u.RuntimeDirectory, []string{"uiod"}) || u.RuntimeDirectoryMode != "0700" {
		t.Errorf("KillSignal %q, RuntimeDirectory %q mode %q", u.KillSignal, u.RuntimeDirectory, u.RuntimeDirectoryMode)
	}
}

// TestParseUnit: the unit reader's rules, and what it refuses rather than misread.
func TestParseUnit(t *testing.T) {
	tests := []struct {
		name    string
		unit    string
		want    [][]string // ExecStartPre, ExecStart, ExecStopPost words
		wantErr string
	}{
		{"other sections ignored", "[Unit]\nExecStart=/bin/no\n[Service]\nExecStart=/usr/bin/uiod run -c /x\n",
			[][]string{nil, {"/usr/bin/uiod run -c /x"}, nil}, ""},
		{"order kept, comments skipped", "[Service]\nExecStopPost=/a 1\n# ExecStopPost=/b\n; x\nExecStopPost=+/c 2\n",
			[][]string{nil, nil, {"/a 1", "/c 2"}}, ""},
		{"continuation", "[Service]\nExecStart=/a \\\n  --config \\\n# comment inside\n  /etc/x.yaml\n",
			[][]string{nil, {"/a --config /etc/x.yaml"}, nil}, ""},
		{"empty resets", "[Service]\nExecStartPre=/a\nExecStartPre=\nExecStartPre=/b\n",
			[][]string{{"/b"}, nil, nil}, ""},
		{"quotes", "[Service]\nExecStart=/a \"b c\" 'd'\n", [][]string{nil, {"/a b c d"}, nil}, ""},
		{"specifier", "[Service]\nExecStart=/a %n\n", nil, "specifiers"},
		{"variable not set", "[Service]\nExecStart=/a $CONF\n", nil, "does not set"},
		{"variables", "[Service]\nExecStart=/a ${CONF} $X\nEnvironment=CONF=/c.yaml \"X=y\"\n", [][]string{nil, {"/a /c.yaml y"}, nil}, ""},
		{"variable with blanks", "[Service]\nEnvironment=\"CONF=a b\"\nExecStart=/a ${CONF}\n", nil, "blanks"},
		{"optional environment file", "[Service]\nEnvironmentFile=-/nonexistent/uiod\nEnvironment=C=/c\nExecStart=/a $C\n", [][]string{nil, {"/a /c"}, nil}, ""},
		{"reload read past", "[Service]\nExecReload=/bin/kill -HUP $MAINPID\nExecStart=/a\n", [][]string{nil, {"/a"}, nil}, ""},
		{"two commands", "[Service]\nExecStart=/a ; /b\n", nil, `";"`},
		{"relative executable", "[Service]\nExecStart=uiod run\n", nil, "absolute"},
		{"unimplemented prefix", "[Service]\nExecStart=!/a\n", nil, "prefix"},
		{"unterminated quote", "[Service]\nExecStart=/a \"b\n", nil, "unterminated"},
		{"ExecStop not run", "[Service]\nExecStop=/a\n", nil, "ExecStop"},
		{"not key=value", "[Service]\nExecStart\n", nil, "KEY=VALUE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := parseUnit(strings.NewReader(tt.unit))
			if tt.wantErr != "" {
				testutil.ErrorContains(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range [][]execLine{u.StartPre, u.Start, u.StopPost} {
				var got []string
				for _, e := range l {
					got = append(got, strings.Join(e.Args, " "))
				}
				if !reflect.DeepEqual(got, tt.want[i]) {
					t.Errorf("list %d: %q, want %q", i, got, tt.want[i])
				}
			}
		})
	}
}

// FuzzParseUnit: the unit reader never panics, and every command it returns has an
// absolute executable and no word that would be expanded.
func FuzzParseUnit(f *testing.F) {
	f.Add("[Service]\nExecStartPre=+/usr/bin/uiod bind --config /etc/uiod/uiod.yaml\n")
	f.Add("[Service]\nExecStart=/a \"b c\" \\\n d\n")
	f.Fuzz(func(t *testing.T, unit string) {
		u, err := parseUnit(strings.NewReader(unit))
		if err != nil {
			return
		}
		for _, l := range [][]execLine{u.StartPre, u.Start, u.StopPost} {
			for _, e := range l {
				if len(e.Args) == 0 || !strings.HasPrefix(e.Args[0], "/") {
					t.Fatalf("%q: executable %q", e.Raw, e.Args)
				}
			}
		}
	})
}
