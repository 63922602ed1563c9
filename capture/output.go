package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// OutputConfig says where `uiod capture` writes.
type OutputConfig struct {
	// Path is the file to write, "-" for Stdout. With a ring buffer it is the files'
	// name pattern: NAME.EXT becomes NAME_00001_YYYYMMDDhhmmss.EXT, and so on.
	Path   string
	Stdout io.Writer
	// GroupRead creates files 0640 instead of 0600.
	GroupRead bool
	// Pcap writes libpcap format (nanosecond timestamps) instead of pcapng: one port
	// only, and no statistics blocks.
	Pcap bool
	// Ring-buffer files: switch to a new file when the current one holds FileSize bytes
	// or is FileDuration old (0: never), keeping the newest Files of them (0: all).
	FileSize     int64
	FileDuration time.Duration
	Files        int
	// Autostop: end the capture once a file holds StopFileSize bytes, or once
	// StopFiles files were written and the last is full (0: no such limit).
	StopFileSize int64
	StopFiles    int
	// Now gives the time for ring-buffer file names (nil: time.Now).
	Now func() time.Time
}

// Output is where a capture goes: it creates its files only once the daemon accepted
// the capture, creates them 0600 (0640 with GroupRead), writes into an existing file
// only if it is a regular file, and removes only files it created.
type Output struct {
	cfg    OutputConfig
	exists bool // Path is an existing regular file (no ring buffer)
	mode   os.FileMode

	f        *os.File
	bw       *bufio.Writer
	size     int64
	opened   time.Time
	packets  bool // the current file holds a packet
	kept     []string
	files    []string
	pcapHead []byte // the pcap file header, once the interface is known
	scratch  []byte
}

// NewOutput checks cfg and the target: it refuses a target that is not a regular file
// (a device, a directory, a symbolic link) or whose directory does not exist. It
// creates nothing.
func NewOutput(cfg OutputConfig) (*Output, error) {
	o := &Output{cfg: cfg, mode: 0o600}
	if cfg.GroupRead {
		o.mode = 0o640
	}
	if o.cfg.Now == nil {
		o.cfg.Now = time.Now
	}
	ring := cfg.FileSize > 0 || cfg.FileDuration > 0
	switch {
	case cfg.Path == "":
		return nil, errors.New("-w: give a file to write, or - for standard output")
	case cfg.Path == "-" && ring:
		return nil, errors.New("-b: a ring buffer needs -w FILE, not standard output")
	case cfg.Path == "-" && cfg.StopFileSize > 0:
		return nil, errors.New("-a filesize: needs -w FILE, not standard output")
	case cfg.Files < 0 || cfg.FileSize < 0 || cfg.StopFiles < 0 || cfg.StopFileSize < 0 || cfg.FileDuration < 0:
		return nil, errors.New("-b, -a: sizes, counts and durations must not be negative")
	case cfg.Files > 0 && !ring:
		return nil, errors.New("-b files: needs -b filesize or -b duration to switch files")
	case cfg.StopFiles > 0 && !ring:
		return nil, errors.New("-a files: needs -b filesize or -b duration to switch files")
	case cfg.Path == "-":
		if cfg.Stdout == nil {
			return nil, errors.New("-w -: no standard output")
		}
		return o, nil
	}
	fi, err := os.Lstat(cfg.Path)
	switch {
	case err == nil && ring:
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("-w %s: is not a regular file (%s)", cfg.Path, fileKind(fi.Mode()))
		}
	case err == nil:
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("-w %s: is not a regular file (%s): uiod capture writes only regular files", cfg.Path, fileKind(fi.Mode()))
		}
		o.exists = true
	case errors.Is(err, fs.ErrNotExist):
		dir := filepath.Dir(cfg.Path)
		if di, err := os.Stat(dir); err != nil || !di.IsDir() {
			return nil, fmt.Errorf("-w %s: directory %s does not exist", cfg.Path, dir)
		}
	default:
		return nil, fmt.Errorf("-w: %w", err)
	}
	return o, nil
}

// fileKinds name the kinds of file -w refuses, in the order fileKind tests their bits (a
// character device has fs.ModeDevice set too).
var fileKinds = []struct {
	bit  fs.FileMode
	what string
}{
	{fs.ModeSymlink, "a symbolic link; give the file it points to"},
	{fs.ModeDir, "a directory"},
	{fs.ModeCharDevice, "a character device"},
	{fs.ModeDevice, "a block device"},
	{fs.ModeNamedPipe, "a named pipe"},
	{fs.ModeSocket, "a socket"},
}

func fileKind(m os.FileMode) string {
	t := m.Type()
	for _, k := range fileKinds {
		if t&k.bit != 0 {
			return k.what
		}
	}
	return t.String()
}

// open is called once the daemon accepted a capture of ports interfaces.
func (o *Output) open(ports int) error {
	if o.cfg.Pcap && ports != 1 {
		return fmt.Errorf("-P: pcap holds one interface, the capture has %d (use pcapng)", ports)
	}
	if o.cfg.Path == "-" {
		o.bw = bufio.NewWriterSize(o.cfg.Stdout, 64<<10)
		return nil
	}
	return o.next()
}

// ringName is the n-th (from 1) ring-buffer file's name.
func (o *Output) ringName(n int) string {
	ext := filepath.Ext(o.cfg.Path)
	base := strings.TrimSuffix(o.cfg.Path, ext)
	if ext == "" {
		ext = ".pcapng"
		if o.cfg.Pcap {
			ext = ".pcap"
		}
	}
	return fmt.Sprintf("%s_%05d_%s%s", base, n, o.cfg.Now().Format("20060102150405"), ext)
}

func (o *Output) ring() bool { return o.cfg.FileSize > 0 || o.cfg.FileDuration > 0 }

// next closes the current file, if any, and opens the next one.
func (o *Output) next() error {
	if err := o.closeFile(); err != nil {
		return err
	}
	name := o.cfg.Path
	var f *os.File
	var err error
	if o.ring() {
		name = o.ringName(len(o.files) + 1)
	}
	if o.exists {
		f, err = openExisting(name, o.mode)
	} else {
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, o.mode)
	}
	if err != nil {
		return fmt.Errorf("-w: %w", err)
	}
	o.f, o.bw, o.size, o.packets, o.opened = f, bufio.NewWriterSize(f, 64<<10), 0, false, time.Now()
	o.files = append(o.files, name)
	if o.ring() {
		o.kept = append(o.kept, name)
		if o.cfg.Files > 0 && len(o.kept) > o.cfg.Files {
			if err := os.Remove(o.kept[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("ring buffer: %w", err)
			}
			o.kept = o.kept[1:]
		}
	}
	return nil
}

// openExisting truncates the regular file at name and gives it mode if it is ours (the
// mode an earlier file had must not leave the new capture readable to others).
func openExisting(name string, mode os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: is not a regular file (%s)", name, fileKind(fi.Mode()))
	}
	if err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
			err = f.Chmod(mode)
		}
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (o *Output) closeFile() error {
	if o.f == nil {
		return nil
	}
	err := o.bw.Flush()
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	o.f = nil
	return err
}

func (o *Output) close() error {
	if o.f == nil {
		if o.bw != nil {
			return o.bw.Flush()
		}
		return nil
	}
	return o.closeFile()
}

func (o *Output) write(b []byte) error {
	if _, err := o.bw.Write(b); err != nil {
		return fmt.Errorf("write %s: %w", o.cfg.Path, err)
	}
	o.size += int64(len(b))
	return nil
}

// block writes one block of the stream and reports whether an autostop condition holds.
func (o *Output) block(b *ngBlock, rd *ngReader) (stop bool, err error) {
	switch b.typ {
	case blockSHB:
		if o.cfg.Pcap {
			return false, nil
		}
	case blockIDB:
		if o.cfg.Pcap {
			if len(rd.ifaces) > 1 {
				return false, errors.New("-P: pcap holds one interface")
			}
			ifc := rd.ifaces[0]
			o.pcapHead = binary.NativeEndian.AppendUint32(o.pcapHead[:0], 0xa1b23c4d) // nanosecond pcap
			o.pcapHead = binary.NativeEndian.AppendUint16(o.pcapHead, 2)
			o.pcapHead = binary.NativeEndian.AppendUint16(o.pcapHead, 4)
			o.pcapHead = binary.NativeEndian.AppendUint64(o.pcapHead, 0)
			o.pcapHead = binary.NativeEndian.AppendUint32(o.pcapHead, ifc.snaplen)
			o.pcapHead = binary.NativeEndian.AppendUint32(o.pcapHead, uint32(ifc.linkType))
			return false, o.write(o.pcapHead)
		}
	case blockEPB:
		if o.ring() && o.packets && ((o.cfg.FileSize > 0 && o.size >= o.cfg.FileSize) ||
			(o.cfg.FileDuration > 0 && time.Since(o.opened) >= o.cfg.FileDuration)) {
			if o.cfg.StopFiles > 0 && len(o.files) >= o.cfg.StopFiles {
				stop = true // keep writing what is still coming into the last file
			} else if err := o.rotate(rd); err != nil {
				return false, err
			}
		}
		o.packets = true
		if o.cfg.Pcap {
			err = o.pcapRecord(b)
		} else {
			err = o.write(b.raw)
		}
		if err != nil {
			return false, err
		}
		if o.cfg.StopFileSize > 0 && o.size >= o.cfg.StopFileSize {
			stop = true
		}
		return stop, nil
	case blockISB:
		if o.cfg.Pcap {
			return false, nil
		}
	}
	if o.cfg.Pcap {
		return false, nil
	}
	return false, o.write(b.raw)
}

// rotate starts the next ring-buffer file with the section's header and interfaces.
func (o *Output) rotate(rd *ngReader) error {
	if err := o.next(); err != nil {
		return err
	}
	if o.cfg.Pcap {
		return o.write(o.pcapHead)
	}
	if err := o.write(rd.shb); err != nil {
		return err
	}
	for _, idb := range rd.idbs {
		if err := o.write(idb); err != nil {
			return err
		}
	}
	return nil
}

func (o *Output) pcapRecord(b *ngBlock) error {
	h := o.scratch[:0]
	h = binary.NativeEndian.AppendUint32(h, uint32(b.ns/1e9))
	h = binary.NativeEndian.AppendUint32(h, uint32(b.ns%1e9))
	h = binary.NativeEndian.AppendUint32(h, uint32(len(b.data)))
	h = binary.NativeEndian.AppendUint32(h, b.origLen)
	o.scratch = h
	if err := o.write(h); err != nil {
		return err
	}
	return o.write(b.data)
}
