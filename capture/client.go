package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/gopacket/gopacket/pcapgo"
)

// Summary is what a finished capture reports, per captured port.
type Summary struct {
	Ports    []string
	Captured []uint64 // packets in the stream
	Dropped  []uint64 // from each interface's statistics block
}

// Capture asks the daemon listening on the control socket at path for req and copies
// the pcapng stream to w until the daemon ends it. Cancelling ctx ends the capture the
// way the daemon ends one: it writes the statistics blocks, and Capture returns once
// they arrived. A refused request is an *Error.
func Capture(ctx context.Context, path string, req Request, w io.Writer) (Summary, error) {
	var sum Summary
	short, done, err := shortPath(path, 0)
	if err != nil {
		return sum, fmt.Errorf("control socket: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", short)
	done()
	if err != nil {
		return sum, fmt.Errorf("connect to the daemon's control socket: %w (is uiod running with this state_dir?)", err)
	}
	c := conn.(*net.UnixConn)
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.CloseWrite() })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return sum, err
	}
	if _, err := c.Write(append(b, '\n')); err != nil {
		return sum, fmt.Errorf("send request: %w", err)
	}
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return sum, fmt.Errorf("read the daemon's answer: %w", err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		return sum, fmt.Errorf("read the daemon's answer: %w", err)
	}
	if resp.Error != "" {
		return sum, &Error{Msg: resp.Error, Usage: resp.Usage}
	}
	sum.Ports = resp.Ports
	sum.Captured = make([]uint64, len(resp.Ports))
	sum.Dropped = make([]uint64, len(resp.Ports))
	// The stream goes to w as it comes, and through a pcapng reader that counts it.
	pr, pw := io.Pipe()
	counted := make(chan error, 1)
	go func() { counted <- sum.count(pr) }()
	_, err = io.Copy(io.MultiWriter(w, pw), br)
	pw.CloseWithError(err)
	if cerr := <-counted; err == nil && cerr != nil && !errors.Is(cerr, io.EOF) {
		err = fmt.Errorf("the stream is not pcapng: %w", cerr)
	}
	return sum, err
}

// count reads a pcapng stream to its end, counting packets per interface and taking the
// drops from the statistics blocks.
func (s *Summary) count(r io.Reader) error {
	defer io.Copy(io.Discard, r)
	ng, err := pcapgo.NewNgReader(r, pcapgo.NgReaderOptions{
		StatisticsCallback: func(i int, st pcapgo.NgInterfaceStatistics) {
			if i < len(s.Dropped) && st.PacketsDropped != pcapgo.NgNoValue64 {
				s.Dropped[i] = st.PacketsDropped
			}
		},
	})
	if err != nil {
		return err
	}
	for {
		_, ci, err := ng.ZeroCopyReadPacketData()
		if err != nil {
			return err
		}
		if ci.InterfaceIndex < len(s.Captured) {
			s.Captured[ci.InterfaceIndex]++
		}
	}
}
