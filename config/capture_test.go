package config

import (
	"os/user"
	"strings"
	"testing"
)

// fakeGroups replaces the group database for one test: name → gid.
func fakeGroups(t *testing.T, db map[string]string) {
	t.Helper()
	savedName, savedID := lookupGroup, lookupGroupID
	t.Cleanup(func() { lookupGroup, lookupGroupID = savedName, savedID })
	lookupGroup = func(name string) (*user.Group, error) {
		if gid, ok := db[name]; ok {
			return &user.Group{Name: name, Gid: gid}, nil
		}
		return nil, user.UnknownGroupError(name)
	}
	lookupGroupID = func(gid string) (*user.Group, error) {
		for name, id := range db {
			if id == gid {
				return &user.Group{Name: name, Gid: gid}, nil
			}
		}
		return nil, user.UnknownGroupIdError(gid)
	}
}

// TestCaptureGroup: capture.group takes a group of the database by name or any gid by
// number (YAML integer or string, or $UIOD_CAPTURE_GROUP); a name the database lacks, a gid
// out of range or a value of the wrong shape is refused on capture.group.
func TestCaptureGroup(t *testing.T) {
	fakeGroups(t, map[string]string{"wireshark": "121", "odd": "x1"})
	tests := []struct {
		name, yaml string
		env        []string
		want       Group
		ok         bool
		msg        string // substring of the capture.group error; "" for none
	}{
		{"absent", "", nil, Group{}, false, ""},
		{"empty", "capture: {group: \"\"}\n", nil, Group{}, false, ""},
		{"name", "capture: {group: wireshark}\n", nil, Group{ID: 121, Name: "wireshark"}, true, ""},
		{"gid with a name", "capture: {group: 121}\n", nil, Group{ID: 121, Name: "wireshark"}, true, ""},
		{"gid as a string", "capture: {group: \"5000\"}\n", nil, Group{ID: 5000}, true, ""},
		{"gid 0", "capture: {group: 0}\n", nil, Group{ID: 0}, true, ""},
		{"largest gid", "capture: {group: 4294967294}\n", nil, Group{ID: 4294967294}, true, ""},
		{"from the environment", "", []string{"UIOD_CAPTURE_GROUP", "wireshark"}, Group{ID: 121, Name: "wireshark"}, true, ""},
		{"unknown name", "capture: {group: wirehsark}\n", nil, Group{}, false, `capture.group = "wirehsark": no such group in /etc/group`},
		{"unknown name from the environment", "", []string{"UIOD_CAPTURE_GROUP", "nope"}, Group{}, false, "(from $UIOD_CAPTURE_GROUP)"},
		{"gid -1", "capture: {group: 4294967295}\n", nil, Group{}, false, "gid out of range: a gid is 0 to 4294967294"},
		{"gid too large", "capture: {group: 99999999999}\n", nil, Group{}, false, "gid out of range"},
		{"negative", "capture: {group: -5}\n", nil, Group{}, false, `capture.group = "-5": no such group`},
		{"database gid not a number", "capture: {group: odd}\n", nil, Group{}, false, `gives it gid "x1"`},
		{"a list", "capture: {group: [a]}\n", nil, Group{}, false, "capture.group: want a string, got a list"},
		{"a mapping", "capture: wireshark\n", nil, Group{}, false, `capture = "wireshark": want a mapping`},
		{"misspelt key", "capture: {gruop: wireshark}\n", nil, Group{}, false, "capture.gruop: unknown key; did you mean group?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := read(t, simPorts+"forward: {mode: reflect}\n"+tt.yaml, tt.env...)
			if tt.msg != "" {
				fe := fieldErrs(t, err)
				if len(fe) != 1 || !strings.HasPrefix(fe[0].Path, "capture") || !strings.Contains(fe[0].Error(), tt.msg) {
					t.Fatalf("errors %v, want one on capture with %q", err, tt.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, ok, err := c.Capture.ResolveGroup()
			if err != nil || ok != tt.ok || g != tt.want {
				t.Errorf("ResolveGroup = %+v, %v, %v; want %+v, %v", g, ok, err, tt.want, tt.ok)
			}
		})
	}
}

// TestCaptureGroupSystemDatabase resolves a group of this machine's own database: root,
// gid 0, which every Linux /etc/group has.
func TestCaptureGroupSystemDatabase(t *testing.T) {
	if _, err := user.LookupGroup("root"); err != nil {
		t.Skipf("no group root here: %v", err)
	}
	g, ok, err := Capture{Group: "root"}.ResolveGroup()
	if err != nil || !ok || g != (Group{ID: 0, Name: "root"}) {
		t.Fatalf("ResolveGroup(root) = %+v, %v, %v", g, ok, err)
	}
	if _, _, err := (Capture{Group: "uiod-no-such-group-x"}).ResolveGroup(); err == nil || !strings.Contains(err.Error(), "no such group") {
		t.Fatalf("ResolveGroup of a missing group = %v", err)
	}
}

func TestGroupString(t *testing.T) {
	for _, tt := range []struct {
		g    Group
		want string
	}{{Group{ID: 121, Name: "wireshark"}, "wireshark (gid 121)"}, {Group{ID: 5000}, "gid 5000"}} {
		if got := tt.g.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.g, got, tt.want)
		}
	}
}
