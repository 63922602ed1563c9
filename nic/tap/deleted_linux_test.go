package tap

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/uiod/uiod/internal/testutil"
)

// TestIntegrationDeleted: a TAP deleted under the port (ip link del) is logged once, at
// once, with the interface's name; the port's link reads down from then on, and the
// reader stops reading the detached descriptor instead of retrying it for ever. On the
// old code: the link stayed up, the warning came only after about a second of retries,
// and reads went on once a second until Close.
func TestIntegrationDeleted(t *testing.T) {
	ns := testutil.TAPNetns(t, "uiod-tapdel")
	core, logs := observer.New(zap.InfoLevel)
	p, err := openIn(t, ns, Config{Name: "uiodk0", Log: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Link().Up || p.Gone() {
		t.Fatalf("link %+v, gone %v before the deletion", p.Link(), p.Gone())
	}
	testutil.IPIn(t, ns, "link", "del", "uiodk0")
	testutil.Eventually(t, 5*time.Second, func() bool { return !p.Link().Up && p.Gone() },
		"link %+v, gone %v after the interface was deleted: want down, gone", p.Link(), p.Gone())
	warned := func() int {
		n := 0
		for _, e := range logs.All() {
			if strings.Contains(e.Message, "deleted") && e.ContextMap()["tap"] == "uiodk0" {
				n++
			}
		}
		return n
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return warned() == 1 }, "log %v: want one line naming the deleted interface", logs.All())
	// The reader has stopped: no more read errors however long the port stays open (a
	// retry once a second would add at least one in 1.5 s).
	errs := p.Stats().RxErrors
	time.Sleep(1500 * time.Millisecond)
	if n := p.Stats().RxErrors; n != errs || n > 1 {
		t.Errorf("read errors %d, then %d 1.5 s later: want the reader stopped after one", errs, n)
	}
	if logs.Len() != 1 {
		t.Errorf("log %v: want the one line", logs.All())
	}
	p.Close() // the interface is gone already: Close has nothing to give back
}
