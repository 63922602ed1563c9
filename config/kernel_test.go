package config

import "testing"

func TestKernel(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		c, err := read(t, `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: uiod-a, allmulti: true}}
  - {name: b, driver: sim, wire: "pair:b"}
`)
		if err != nil {
			t.Fatal(err)
		}
		if c.Ports[0].Kernel != (Kernel{TAP: "uiod-a", AllMulti: true}) || c.Ports[1].Kernel != (Kernel{}) {
			t.Fatalf("kernel paths %+v, %+v", c.Ports[0].Kernel, c.Ports[1].Kernel)
		}
	})
	cases := []struct {
		name, text, path string
		msgs             []string
	}{
		{"name too long", port0("kernel", "{tap: abcdefghijklmnop}"), "ports[0].kernel.tap",
			[]string{"abcdefghijklmnop", "16 bytes, longer than the kernel's 15"}},
		{"bad character", port0("kernel", `{tap: "tap%d"}`), "ports[0].kernel.tap", []string{"'%'"}},
		{"unknown key", port0("kernel", "{tun: x}"), "ports[0].kernel.tun", []string{"unknown key", "did you mean tap?"}},
		{"allmulti without a TAP", port0("kernel", "{allmulti: true}"), "ports[0].kernel.allmulti",
			[]string{"needs kernel.tap"}},
		{"allmulti not a bool", port0("kernel", "{tap: k0, allmulti: often}"), "ports[0].kernel.allmulti", nil},
		{"same TAP on two ports", `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: k0}}
  - {name: b, driver: sim, wire: "pair:b", kernel: {tap: k0}}
`, "ports[1].kernel.tap", []string{"k0", "already the kernel path of ports[0]"}},
		{"a wire's interface", `
ports:
  - {name: a, driver: sim, wire: "pair:a", kernel: {tap: veth1}}
  - {name: b, driver: sim, wire: "afpacket:veth1"}
`, "ports[0].kernel.tap", []string{"veth1", "ports[1].wire"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := read(t, c.text)
			wantOneError(t, err, c.path, c.msgs...)
		})
	}
}
