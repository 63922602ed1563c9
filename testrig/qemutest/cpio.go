package qemutest

import (
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// File type bits of Entry.Mode, as the newc format stores them (Linux's S_IF*).
const (
	ModeDir     = 0o040000 // a directory
	ModeRegular = 0o100000 // a regular file
	ModeSymlink = 0o120000 // a symbolic link
	ModeCharDev = 0o020000 // a character device node
)

// Entry is one file of an initramfs.
type Entry struct {
	Name string // path inside the archive, without a leading '/'
	Mode uint32 // type and permission bits (ModeRegular|0o755, …)
	Data []byte // contents; or, when Source is set, nothing
	// Source is a host file copied in as the contents (read when the archive is written).
	Source string
	// Link is a symlink's target.
	Link string
	// Major and Minor are a device node's numbers.
	Major, Minor uint32
}

// newcWriter writes a cpio archive in the "new ASCII" (newc, magic 070701) format the
// kernel unpacks into its rootfs. Parent directories are added before their contents.
type newcWriter struct {
	w    io.Writer
	ino  uint32
	off  int64
	dirs map[string]bool
}

func newNewcWriter(w io.Writer) *newcWriter {
	return &newcWriter{w: w, ino: 1, dirs: map[string]bool{".": true, "": true}}
}

// add writes e (after any parent directories not yet written).
func (c *newcWriter) add(e Entry) error {
	name := strings.TrimPrefix(path.Clean("/"+e.Name), "/")
	if name == "" || name == "TRAILER!!!" {
		return fmt.Errorf("initramfs entry %q: bad name", e.Name)
	}
	if err := c.parents(path.Dir(name)); err != nil {
		return err
	}
	switch e.Mode &^ 0o7777 {
	case ModeDir:
		if c.dirs[name] {
			return nil
		}
		c.dirs[name] = true
		return c.header(name, e.Mode, 0, 0, 0, nil)
	case ModeSymlink:
		return c.header(name, e.Mode, 0, 0, int64(len(e.Link)), strings.NewReader(e.Link))
	case ModeCharDev:
		return c.header(name, e.Mode, e.Major, e.Minor, 0, nil)
	case ModeRegular:
		if e.Source == "" {
			return c.header(name, e.Mode, 0, 0, int64(len(e.Data)), strings.NewReader(string(e.Data)))
		}
		f, err := os.Open(e.Source)
		if err != nil {
			return fmt.Errorf("initramfs entry %s: %w", name, err)
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("initramfs entry %s: %w", name, err)
		}
		return c.header(name, e.Mode, 0, 0, st.Size(), f)
	default:
		return fmt.Errorf("initramfs entry %s: unsupported mode %#o", name, e.Mode)
	}
}

func (c *newcWriter) parents(dir string) error {
	if c.dirs[dir] {
		return nil
	}
	if err := c.parents(path.Dir(dir)); err != nil {
		return err
	}
	c.dirs[dir] = true
	return c.header(dir, ModeDir|0o755, 0, 0, 0, nil)
}

// header writes one record: the 110-byte header, the NUL-terminated name padded to 4
// bytes, and size bytes of data from r padded to 4 bytes.
func (c *newcWriter) header(name string, mode, major, minor uint32, size int64, r io.Reader) error {
	if size > 0xffffffff {
		return fmt.Errorf("initramfs entry %s: %d bytes is too large for newc", name, size)
	}
	nlink := uint32(1)
	if mode&^0o7777 == ModeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, uint32(size), 0, 0, major, minor, len(name)+1, 0)
	c.ino++
	if err := c.write([]byte(hdr + name + "\x00")); err != nil {
		return err
	}
	if err := c.pad(); err != nil {
		return err
	}
	if r != nil {
		n, err := io.CopyN(c.w, r, size)
		c.off += n
		if err != nil {
			return fmt.Errorf("initramfs entry %s: %w", name, err)
		}
	}
	return c.pad()
}

func (c *newcWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.off += int64(n)
	return err
}

func (c *newcWriter) pad() error {
	if r := c.off % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// close writes the trailer record that ends the archive.
func (c *newcWriter) close() error {
	return c.header("TRAILER!!!", 0, 0, 0, 0, nil)
}
