package qemutest

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

func TestParseModinfo(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string][]string
		wantErr bool
	}{
		{"empty", "", map[string][]string{}, false},
		{"fields", "license=GPL\x00depends=vfio,irqbypass\x00name=vfio_pci_core\x00",
			map[string][]string{"license": {"GPL"}, "depends": {"vfio,irqbypass"}, "name": {"vfio_pci_core"}}, false},
		{"repeated keys and padding", "alias=pci:v1\x00\x00\x00alias=pci:v2\x00depends=\x00",
			map[string][]string{"alias": {"pci:v1", "pci:v2"}, "depends": {""}}, false},
		{"value with =", "parm=x:a=b\x00", map[string][]string{"parm": {"x:a=b"}}, false},
		{"no =", "license=GPL\x00garbage\x00", nil, true},
		{"empty key", "=x\x00", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseModinfo([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func FuzzParseModinfo(f *testing.F) {
	f.Add([]byte("depends=a,b\x00name=c\x00"))
	f.Add([]byte("\x00\x00="))
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := ParseModinfo(b)
		if err != nil {
			return
		}
		n := 0
		for k, vs := range info {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				t.Fatalf("bad key %q", k)
			}
			n += len(vs)
		}
		if n > len(b)/2+1 {
			t.Fatalf("%d values from %d bytes", n, len(b))
		}
	})
}

// fakeModule returns a minimal relocatable ELF64 file whose .modinfo section is modinfo.
func fakeModule(modinfo string) []byte {
	const shstr = "\x00.modinfo\x00.shstrtab\x00"
	le := binary.LittleEndian
	modOff := 64
	strOff := modOff + len(modinfo)
	shoff := (strOff + len(shstr) + 7) &^ 7
	b := make([]byte, shoff+3*64)
	copy(b, "\x7fELF\x02\x01\x01")
	le.PutUint16(b[16:], 1)  // ET_REL
	le.PutUint16(b[18:], 62) // EM_X86_64
	le.PutUint32(b[20:], 1)
	le.PutUint64(b[40:], uint64(shoff))
	le.PutUint16(b[52:], 64)
	le.PutUint16(b[58:], 64)
	le.PutUint16(b[60:], 3)
	le.PutUint16(b[62:], 2)
	copy(b[modOff:], modinfo)
	copy(b[strOff:], shstr)
	section := func(i int, name, typ uint32, off, size int) {
		h := b[shoff+64*i:]
		le.PutUint32(h[0:], name)
		le.PutUint32(h[4:], typ)
		le.PutUint64(h[24:], uint64(off))
		le.PutUint64(h[32:], uint64(size))
		le.PutUint64(h[48:], 1)
	}
	section(1, 1, 1, modOff, len(modinfo)) // .modinfo, PROGBITS
	section(2, 10, 3, strOff, len(shstr))  // .shstrtab, STRTAB
	return b
}

// moduleTree writes a lib/modules/<version> tree: files maps a path under kernel/ to the
// module's depends= value.
func moduleTree(t *testing.T, files map[string]string, builtin ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "6.1.0-test")
	for rel, deps := range files {
		p := filepath.Join(dir, "kernel", rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(rel), ".ko")
		if err := os.WriteFile(p, fakeModule("license=GPL\x00depends="+deps+"\x00name="+name+"\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var bl strings.Builder
	for _, b := range builtin {
		bl.WriteString("kernel/" + b + ".ko\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte(bl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestResolveModules(t *testing.T) {
	dir := moduleTree(t, map[string]string{
		"drivers/vfio/vfio.ko":                "",
		"drivers/vfio/pci/vfio-pci-core.ko":   "vfio,irqbypass",
		"drivers/vfio/pci/vfio-pci.ko":        "vfio-pci-core,vfio",
		"virt/lib/irqbypass.ko":               "",
		"drivers/uio/uio_pci_generic.ko":      "uio",
		"drivers/uio/uio.ko":                  "",
		"drivers/net/igb/igb.ko":              "dca,ptp",
		"drivers/dca/dca.ko":                  "",
		"drivers/cycle/a.ko":                  "b",
		"drivers/cycle/b.ko":                  "a",
		"drivers/broken/needs-missing.ko":     "nothere",
		"drivers/builtin-dep/uses-ptp-too.ko": "ptp",
	}, "drivers/ptp/ptp")

	tests := []struct {
		names   []string
		want    []string // Rel of each module, in order
		wantErr string
	}{
		{names: []string{"vfio-pci"}, want: []string{
			"kernel/drivers/vfio/vfio.ko", "kernel/virt/lib/irqbypass.ko",
			"kernel/drivers/vfio/pci/vfio-pci-core.ko", "kernel/drivers/vfio/pci/vfio-pci.ko"}},
		{names: []string{"uio_pci_generic", "uio", "igb"}, want: []string{
			"kernel/drivers/uio/uio.ko", "kernel/drivers/uio/uio_pci_generic.ko",
			"kernel/drivers/dca/dca.ko", "kernel/drivers/net/igb/igb.ko"}},
		{names: []string{"ptp"}, want: nil},
		{names: []string{"a"}, wantErr: "cycle"},
		{names: []string{"needs-missing"}, wantErr: "nothere (needed by needs_missing): not found"},
		{names: []string{"e1000e"}, wantErr: "e1000e: not found"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			mods, err := ResolveModules(dir, tt.names)
			if tt.wantErr != "" {
				testutil.ErrorContains(t, err, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range mods {
				got = append(got, m.Rel)
				if len(m.Data) == 0 {
					t.Errorf("module %s has no data", m.Name)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestResolveModulesCompressed(t *testing.T) {
	if _, err := exec.LookPath("xz"); err != nil {
		t.Skip("xz not installed")
	}
	dir := moduleTree(t, map[string]string{"drivers/uio/uio.ko": "", "drivers/uio/uio_pci_generic.ko": "uio"})
	p := filepath.Join(dir, "kernel/drivers/uio/uio.ko")
	want, _ := os.ReadFile(p)
	if out, err := exec.Command("xz", p).CombinedOutput(); err != nil {
		t.Fatalf("xz: %v: %s", err, out)
	}
	mods, err := ResolveModules(dir, []string{"uio_pci_generic"})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) != 2 || mods[0].Rel != "kernel/drivers/uio/uio.ko" || string(mods[0].Data) != string(want) {
		t.Fatalf("got %d modules, first %q (%d bytes), want the uncompressed uio.ko first", len(mods), mods[0].Rel, len(mods[0].Data))
	}
}

func TestModulesDep(t *testing.T) {
	mods := []Module{
		{Name: "vfio", Rel: "kernel/vfio.ko"},
		{Name: "irqbypass", Rel: "kernel/irqbypass.ko"},
		{Name: "vfio_pci_core", Rel: "kernel/vfio-pci-core.ko", Depends: []string{"vfio", "irqbypass"}},
		{Name: "vfio_pci", Rel: "kernel/vfio-pci.ko", Depends: []string{"vfio_pci_core", "vfio", "builtin_one"}},
	}
	want := "kernel/vfio.ko:\n" +
		"kernel/irqbypass.ko:\n" +
		"kernel/vfio-pci-core.ko: kernel/irqbypass.ko kernel/vfio.ko\n" +
		"kernel/vfio-pci.ko: kernel/vfio-pci-core.ko kernel/irqbypass.ko kernel/vfio.ko\n"
	if got := string(ModulesDep(mods)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestResolveModulesDebian resolves the default module list against the Debian kernel that
// scripts/qemu-setup.sh extracts, when it is there.
func TestResolveModulesDebian(t *testing.T) {
	k, err := DebianKernel()
	if err != nil {
		t.Skip(err)
	}
	mods, err := ResolveModules(k.Modules, DefaultModules)
	if err != nil {
		t.Fatal(err)
	}
	pos := make(map[string]int)
	for i, m := range mods {
		pos[m.Name] = i
	}
	for _, m := range mods {
		for _, d := range m.Depends {
			if i, ok := pos[d]; ok && i > pos[m.Name] {
				t.Errorf("%s comes before its dependency %s", m.Name, d)
			}
		}
	}
	for _, n := range DefaultModules {
		if _, ok := pos[ModuleName(n)]; !ok {
			t.Errorf("%s missing from %v", n, pos)
		}
	}
}
