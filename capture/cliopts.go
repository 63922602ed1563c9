package capture

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/uiod/uiod/internal/clip"
)

// maxKB bounds a size given in kB (dumpcap's 2 TiB limit, in 1000-byte kB).
const maxKB = 2 << 30

// splitCond splits "key:value" and checks key against keys.
func splitCond(flag, s string, keys ...string) (key, val string, err error) {
	key, val, ok := strings.Cut(s, ":")
	if ok && val != "" {
		for _, k := range keys {
			if key == k {
				return key, val, nil
			}
		}
	}
	return "", "", fmt.Errorf("%s %s: want %s:VALUE", flag, clip.Quote(s), strings.Join(keys, ":VALUE, "))
}

func parseCount(flag, key, val string, limit uint64) (uint64, error) {
	n, err := strconv.ParseUint(val, 10, 64)
	if err != nil || n == 0 || n > limit {
		return 0, fmt.Errorf("%s %s:%s: want a whole number from 1 to %d", flag, key, clip.Quote(val), limit)
	}
	return n, nil
}

// parseSeconds takes dumpcap's seconds (a whole or decimal number) or a Go duration.
func parseSeconds(flag, key, val string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(val, 64); err == nil && f > 0 && f <= maxDuration.Seconds() {
		return time.Duration(f * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(val); err == nil && d > 0 && d <= maxDuration {
		return d, nil
	}
	return 0, fmt.Errorf("%s %s:%s: want seconds or a Go duration (10s, 5m), at most %s", flag, key, clip.Quote(val), maxDuration)
}

// ParseRingBuffer applies one -b option (filesize:KB, files:N or duration:SECONDS) to cfg.
func ParseRingBuffer(cfg *OutputConfig, s string) error {
	key, val, err := splitCond("-b", s, "filesize", "files", "duration")
	if err != nil {
		return err
	}
	switch key {
	case "filesize":
		n, err := parseCount("-b", key, val, maxKB)
		cfg.FileSize = int64(n) * 1000
		return err
	case "files":
		n, err := parseCount("-b", key, val, 100000)
		cfg.Files = int(n)
		return err
	default:
		cfg.FileDuration, err = parseSeconds("-b", key, val)
		return err
	}
}

// ParseAutostop applies one -a option (duration:SECONDS, packets:N, filesize:KB or
// files:N): the first two go to the daemon in req, the others to cfg.
func ParseAutostop(cfg *OutputConfig, req *Request, s string) error {
	key, val, err := splitCond("-a", s, "duration", "packets", "filesize", "files")
	if err != nil {
		return err
	}
	switch key {
	case "duration":
		d, err := parseSeconds("-a", key, val)
		if err == nil {
			req.Duration = d.String()
		}
		return err
	case "packets":
		req.Count, err = parseCount("-a", key, val, 1<<62)
		return err
	case "filesize":
		n, err := parseCount("-a", key, val, maxKB)
		cfg.StopFileSize = int64(n) * 1000
		return err
	default:
		n, err := parseCount("-a", key, val, 100000)
		cfg.StopFiles = int(n)
		return err
	}
}

// ParseBPF parses a classic BPF program as `tcpdump -ddd` prints it: the instruction
// count, then one "code jt jf k" line per instruction, all decimal.
func ParseBPF(text []byte) ([][4]uint32, error) {
	lines := strings.Split(strings.TrimSpace(string(text)), "\n")
	n, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || n < 1 || n > maxFilter {
		return nil, fmt.Errorf("BPF program: first line %s: want the instruction count, 1 to %d", clip.Quote(lines[0]), maxFilter)
	}
	if len(lines)-1 != n {
		return nil, fmt.Errorf("BPF program: %d instructions announced, %d given", n, len(lines)-1)
	}
	prog := make([][4]uint32, n)
	limits := [4]uint64{0xffff, 0xff, 0xff, 0xffffffff}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 {
			return nil, fmt.Errorf("BPF program: instruction %d %s: want code jt jf k", i, clip.Quote(l))
		}
		for j, s := range f {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil || v > limits[j] {
				return nil, fmt.Errorf("BPF program: instruction %d %s: field %d out of range", i, clip.Quote(l), j+1)
			}
			prog[i][j] = uint32(v)
		}
	}
	return prog, nil
}

// pcapHeader is an empty pcap file of Ethernet frames: what tcpdump reads to compile a
// filter for that link type without opening a device.
func pcapHeader(snaplen int) []byte {
	return []byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		byte(snaplen), byte(snaplen >> 8), byte(snaplen >> 16), byte(snaplen >> 24), 1, 0, 0, 0}
}

// CompileExpr compiles a capture filter in pcap-filter(7) syntax for Ethernet frames by
// running tcpdump (`tcpdump -ddd`, reading an empty capture file: no device is opened,
// no privilege needed), and checks the program the daemon would run.
func CompileExpr(expr string, snaplen int) ([][4]uint32, error) {
	if len(expr) > maxFilterText {
		return nil, fmt.Errorf("-f: %d bytes, at most %d", len(expr), maxFilterText)
	}
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		return nil, errors.New("-f: compiling a capture filter needs tcpdump (Debian package tcpdump) on $PATH")
	}
	if snaplen == 0 {
		snaplen = DefaultSnaplen
	}
	cmd := exec.Command(tcpdump, "-ddd", "-r", "-", "--", expr)
	cmd.Stdin = bytes.NewReader(pcapHeader(snaplen))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		// tcpdump names the file it reads first; the error is the last line.
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return nil, fmt.Errorf("-f %s: %s", clip.Quote(expr), clip.String(msg))
	}
	prog, err := ParseBPF(out)
	if err != nil {
		return nil, fmt.Errorf("-f %s: tcpdump's output: %w", clip.Quote(expr), err)
	}
	if _, err := CompileFilter(rawProgram(prog)); err != nil {
		return nil, fmt.Errorf("-f %s: %w", clip.Quote(expr), err)
	}
	return prog, nil
}
