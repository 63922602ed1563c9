package afxdp

import (
	"os"
	"reflect"
	"testing"

	"github.com/mdlayher/netlink"
)

// TestParseDev: a dev-get reply's attributes, the features as 8 or 4 bytes (NLA_UINT),
// unknown attributes skipped.
func TestParseDev(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs func(e *netlink.AttributeEncoder)
		want  DevFeatures
	}{
		{"u64", func(e *netlink.AttributeEncoder) {
			e.Uint32(netdevADevIfindex, 7)
			e.Uint64(netdevADevXDPFeatures, 0x2b)
			e.Uint32(netdevADevXDPZCMaxSegs, 1)
			e.Uint64(netdevADevXSKFeatures, 2)
		}, DevFeatures{Ifindex: 7, XDP: XDPBasic | XDPRedirect | XDPXSKZeroCopy | XDPRxSG, XDPZCMaxSegs: 1, XSK: 2}},
		{"u32 and unknown", func(e *netlink.AttributeEncoder) {
			e.Uint32(netdevADevIfindex, 3)
			e.Uint32(netdevADevXDPFeatures, 0x23)
			e.Uint32(99, 5)
		}, DevFeatures{Ifindex: 3, XDP: XDPBasic | XDPRedirect | XDPRxSG}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := netlink.NewAttributeEncoder()
			tc.attrs(e)
			b, err := e.Encode()
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseDev(b)
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseDev: %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
	if f := (XDPBasic | XDPRedirect | XDPXSKZeroCopy); !f.Native() || !f.ZeroCopy() || XDPBasic.Native() {
		t.Errorf("Native/ZeroCopy of %v", f.Names())
	}
}

// FuzzParseDev: any reply bytes decode or fail, never panic.
func FuzzParseDev(f *testing.F) {
	e := netlink.NewAttributeEncoder()
	e.Uint32(netdevADevIfindex, 1)
	e.Uint64(netdevADevXDPFeatures, 3)
	b, _ := e.Encode()
	f.Add(b)
	f.Add([]byte{4, 0, 3, 0})
	f.Fuzz(func(t *testing.T, b []byte) { parseDev(b) })
}

// TestNetdevDevices: on this kernel the family answers, and lists lo.
func TestNetdevDevices(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	nd, err := DialNetdev()
	if err == ErrNoNetdevFamily {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer nd.Close()
	devs, err := nd.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := devs[1]; !ok {
		t.Fatalf("dev-get dump without lo (ifindex 1): %+v", devs)
	}
}
