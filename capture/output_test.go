package capture

import (
	"io/fs"
	"testing"
)

// fileKind names what -w refuses; a character device (which has fs.ModeDevice set too)
// is not a block device.
func TestFileKind(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeSymlink | 0o777:            "a symbolic link; give the file it points to",
		fs.ModeDir | 0o755:                "a directory",
		fs.ModeDevice | fs.ModeCharDevice: "a character device",
		fs.ModeDevice | 0o660:             "a block device",
		fs.ModeNamedPipe:                  "a named pipe",
		fs.ModeSocket:                     "a socket",
		fs.ModeIrregular:                  fs.ModeIrregular.String(),
	} {
		if got := fileKind(m); got != want {
			t.Errorf("fileKind(%v) = %q, want %q", m, got, want)
		}
	}
}
