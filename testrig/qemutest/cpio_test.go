package qemutest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// newcRecord is one record read back from a newc archive.
type newcRecord struct {
	Name         string
	Mode         uint32
	Major, Minor uint32
	Data         string
}

// readNewc parses a newc archive up to its trailer, checking the alignment rules the kernel
// relies on.
func readNewc(b []byte) ([]newcRecord, error) {
	var recs []newcRecord
	off := 0
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("record at %d: not 4-byte aligned", off)
		}
		if len(b)-off < 110 {
			return nil, fmt.Errorf("record at %d: short header", off)
		}
		h := b[off : off+110]
		if string(h[:6]) != "070701" {
			return nil, fmt.Errorf("record at %d: magic %q", off, h[:6])
		}
		var f [13]uint32
		for i := range f {
			v, err := strconv.ParseUint(string(h[6+8*i:14+8*i]), 16, 32)
			if err != nil {
				return nil, fmt.Errorf("record at %d: field %d: %w", off, i, err)
			}
			f[i] = uint32(v)
		}
		size, namesize := int(f[6]), int(f[11])
		if namesize < 1 || off+110+namesize > len(b) {
			return nil, fmt.Errorf("record at %d: bad name size %d", off, namesize)
		}
		name := string(b[off+110 : off+110+namesize-1])
		if b[off+110+namesize-1] != 0 {
			return nil, fmt.Errorf("record at %d: name not NUL-terminated", off)
		}
		off = (off + 110 + namesize + 3) &^ 3
		if off+size > len(b) {
			return nil, fmt.Errorf("record %s: data past the end", name)
		}
		if name == "TRAILER!!!" {
			return recs, nil
		}
		recs = append(recs, newcRecord{Name: name, Mode: f[1], Major: f[9], Minor: f[10], Data: string(b[off : off+size])})
		off = (off + size + 3) &^ 3
	}
}

func TestNewcWriter(t *testing.T) {
	src := filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(src, []byte("from a host file"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		entries []Entry
		want    []newcRecord
	}{{
		name: "parents first, each once",
		entries: []Entry{
			{Name: "a/b/c.txt", Mode: ModeRegular | 0o644, Data: []byte("xyz")},
			{Name: "/a/b/d", Mode: ModeRegular | 0o755, Data: []byte("12345")},
			{Name: "a", Mode: ModeDir | 0o700},
		},
		want: []newcRecord{
			{Name: "a", Mode: ModeDir | 0o755},
			{Name: "a/b", Mode: ModeDir | 0o755},
			{Name: "a/b/c.txt", Mode: ModeRegular | 0o644, Data: "xyz"},
			{Name: "a/b/d", Mode: ModeRegular | 0o755, Data: "12345"},
		},
	}, {
		name: "symlink, device, host file",
		entries: []Entry{
			{Name: "bin/sh", Mode: ModeSymlink | 0o777, Link: "busybox"},
			{Name: "dev/console", Mode: ModeCharDev | 0o600, Major: 5, Minor: 1},
			{Name: "blob", Mode: ModeRegular | 0o644, Source: src},
			{Name: "empty", Mode: ModeRegular | 0o644},
		},
		want: []newcRecord{
			{Name: "bin", Mode: ModeDir | 0o755},
			{Name: "bin/sh", Mode: ModeSymlink | 0o777, Data: "busybox"},
			{Name: "dev", Mode: ModeDir | 0o755},
			{Name: "dev/console", Mode: ModeCharDev | 0o600, Major: 5, Minor: 1},
			{Name: "blob", Mode: ModeRegular | 0o644, Data: "from a host file"},
			{Name: "empty", Mode: ModeRegular | 0o644},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			w := newNewcWriter(&b)
			for _, e := range tt.entries {
				if err := w.add(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			got, err := readNewc(b.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("archive holds\n%v\nwant\n%v", got, tt.want)
			}
			if b.Len()%4 != 0 {
				t.Errorf("archive is %d bytes, not a multiple of 4", b.Len())
			}
			// The system's cpio, where there is one, must read it the same way.
			if cpio, err := exec.LookPath("cpio"); err == nil {
				cmd := exec.Command(cpio, "-t", "--quiet")
				cmd.Stdin = bytes.NewReader(b.Bytes())
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("cpio -t: %v", err)
				}
				var names []string
				for _, r := range tt.want {
					names = append(names, r.Name)
				}
				if got := strings.Fields(string(out)); strings.Join(got, " ") != strings.Join(names, " ") {
					t.Errorf("cpio -t lists %q, want %q", got, names)
				}
			}
		})
	}
}

func TestNewcWriterErrors(t *testing.T) {
	for _, e := range []Entry{
		{Name: "/", Mode: ModeRegular | 0o644},
		{Name: "TRAILER!!!", Mode: ModeRegular | 0o644},
		{Name: "fifo", Mode: 0o010000 | 0o644},
		{Name: "gone", Mode: ModeRegular | 0o644, Source: filepath.Join(t.TempDir(), "nope")},
	} {
		if err := newNewcWriter(new(bytes.Buffer)).add(e); err == nil {
			t.Errorf("add(%+v) succeeded, want an error", e)
		}
	}
}

// FuzzNewcRoundTrip checks that any file the writer accepts reads back intact and aligned.
func FuzzNewcRoundTrip(f *testing.F) {
	f.Add("etc/uiod/run.sh", []byte("echo hi\n"))
	f.Add("a", []byte{})
	f.Add("../../x/./y", []byte{0, 1, 2})
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		if strings.ContainsRune(name, 0) {
			return
		}
		var b bytes.Buffer
		w := newNewcWriter(&b)
		if err := w.add(Entry{Name: name, Mode: ModeRegular | 0o644, Data: data}); err != nil {
			return
		}
		if err := w.close(); err != nil {
			t.Fatal(err)
		}
		recs, err := readNewc(b.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		last := recs[len(recs)-1]
		if last.Data != string(data) || last.Mode != ModeRegular|0o644 {
			t.Fatalf("read back %+v", last)
		}
		for _, r := range recs[:len(recs)-1] {
			if r.Mode != ModeDir|0o755 || !strings.HasPrefix(last.Name, r.Name+"/") {
				t.Fatalf("record %+v is not a parent of %q", r, last.Name)
			}
		}
	})
}
