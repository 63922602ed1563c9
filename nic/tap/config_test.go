package tap

import (
	"net"
	"reflect"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"defaults", Config{Name: "t0"}, ""},
		{"bad name", Config{Name: "averyveryverylongname"}, `tap "averyveryverylongname": name is 21 bytes`},
		{"multicast MAC", Config{Name: "t0", MAC: net.HardwareAddr{1, 0, 0x5e, 0, 0, 1}}, "mac 01:00:5e:00:00:01: want a unicast"},
		{"short MAC", Config{Name: "t0", MAC: net.HardwareAddr{2, 0}}, "want a unicast"},
		{"MTU too small", Config{Name: "t0", MTU: 67}, "mtu 67"},
		{"MTU too large", Config{Name: "t0", MTU: MaxMTU + 1}, "mtu 9711"},
		{"no TX queues", Config{Name: "t0", TxQueues: -1}, "tx queues -1"},
		{"ring not a power of two", Config{Name: "t0", RxRing: 100}, "rx ring 100"},
		{"ring too large", Config{Name: "t0", TxRing: 8192}, "tx ring 8192"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.withDefaults().validate()
			if c.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("validate = %v, want an error with %q", err, c.wantErr)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want Config
	}{
		{"zero", Config{Name: "t0"}, Config{Name: "t0", MTU: DefaultMTU, TxQueues: 1, RxRing: DefaultRing, TxRing: DefaultRing}},
		{"set", Config{Name: "t0", MTU: 9000, TxQueues: 3, RxRing: 64, TxRing: 128}, Config{Name: "t0", MTU: 9000, TxQueues: 3, RxRing: 64, TxRing: 128}},
		{"negative stays for validate", Config{Name: "t0", TxQueues: -1}, Config{Name: "t0", MTU: DefaultMTU, TxQueues: -1, RxRing: DefaultRing, TxRing: DefaultRing}},
	}
	for _, c := range cases {
		if got := c.cfg.withDefaults(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: withDefaults = %+v, want %+v", c.name, got, c.want)
		}
	}
}
