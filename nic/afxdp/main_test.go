package afxdp

import (
	"os"
	"testing"

	"github.com/uiod/uiod/internal/testutil"
)

// TestMain fails the run if a test leaves a goroutine running.
func TestMain(m *testing.M) { os.Exit(testutil.RunCheckingLeaks(m)) }
