package idle

import (
	"fmt"
	"testing"
)

func TestNames(t *testing.T) {
	for _, tt := range []struct {
		v    fmt.Stringer
		want string
	}{
		{Adaptive, "adaptive"}, {Busy, "busy"}, {SleepRange, "sleep"}, {Mode(3), "idle.Mode(3)"}, {Mode(-1), "idle.Mode(-1)"},
		{Inline, "inline"}, {Threaded, "threaded"}, {Delivery(2), "idle.Delivery(2)"},
		{Polling, "polling"}, {Armed, "armed"}, {Asleep, "asleep"}, {Yielding, "yielding"}, {State(4), "idle.State(4)"},
	} {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.v, got, tt.want)
		}
	}
}
