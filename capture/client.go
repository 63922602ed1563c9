package capture

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
)

// Summary is what a finished capture reports, per captured port.
type Summary struct {
	Ports    []string
	Captured []uint64 // packets in the stream
	Dropped  []uint64 // from each interface's statistics block
	// Ended is why the daemon ended the capture, from the statistics blocks.
	Ended string
	// Files are the files written, in order (those a ring buffer removed included).
	Files []string
}

// Capture asks the daemon listening on the control socket at path for req and writes
// the stream to out until the daemon ends it. out's file is created only once the
// daemon accepted the request. Cancelling ctx, or an autostop condition of out, ends the
// capture the way the daemon ends one: it writes the statistics blocks, and Capture
// returns once they arrived. A refused request is an *Error.
func Capture(ctx context.Context, path string, req Request, out *Output) (Summary, error) {
	var sum Summary
	c, br, resp, err := ask(ctx, path, req)
	if err != nil {
		return sum, err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.CloseWrite() })
	defer stop()
	sum.Ports = resp.Ports
	sum.Captured = make([]uint64, len(resp.Ports))
	sum.Dropped = make([]uint64, len(resp.Ports))
	if err := out.open(len(resp.Ports)); err != nil {
		return sum, err
	}
	err = sum.copy(newNgReader(br), out, func() { c.CloseWrite() })
	sum.Files = out.files
	if cerr := out.close(); err == nil {
		err = cerr
	}
	return sum, err
}

// copy moves the stream's blocks to out, counting packets per interface and taking the
// drops from the statistics blocks.
func (s *Summary) copy(rd *ngReader, out *Output, stop func()) error {
	stats, stopped := 0, false
	for {
		b, err := rd.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("the stream from the daemon: %w", err)
		}
		if b.typ == blockIDB && len(rd.ifaces) > len(s.Ports) {
			return fmt.Errorf("the stream from the daemon: %d interfaces for %d ports", len(rd.ifaces), len(s.Ports))
		}
		switch b.typ {
		case blockEPB:
			s.Captured[b.iface]++
		case blockISB:
			stats++
			if b.drop >= 0 {
				s.Dropped[b.iface] = uint64(b.drop)
			}
			if _, why, ok := strings.Cut(b.comment, "; ended: "); ok {
				s.Ended = why
			}
		}
		want, err := out.block(&b, rd)
		if err != nil {
			return err
		}
		if want && !stopped {
			stopped = true
			stop()
		}
	}
	if stats < len(s.Ports) {
		return errors.New("the daemon ended the stream without its statistics blocks")
	}
	return nil
}

// List asks the daemon listening on the control socket at path for its ports.
func List(ctx context.Context, path string) ([]PortInfo, error) {
	c, _, resp, err := ask(ctx, path, Request{Op: "list"})
	if err != nil {
		return nil, err
	}
	c.Close()
	return resp.List, nil
}

// ask connects, sends req and reads the daemon's answer.
func ask(ctx context.Context, path string, req Request) (*net.UnixConn, *bufio.Reader, Response, error) {
	var resp Response
	short, done, err := shortPath(path, 0)
	if err != nil {
		return nil, nil, resp, fmt.Errorf("control socket: %w", err)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", short)
	done()
	if errors.Is(err, syscall.EACCES) {
		if hint := accessHint(path); hint != "" {
			return nil, nil, resp, fmt.Errorf("connect to the daemon's control socket %s: %w: %s", path, syscall.EACCES, hint)
		}
	}
	if err != nil {
		return nil, nil, resp, fmt.Errorf("connect to the daemon's control socket: %w (is uiod running with this state_dir?)", err)
	}
	c := conn.(*net.UnixConn)
	fail := func(err error) (*net.UnixConn, *bufio.Reader, Response, error) {
		c.Close()
		return nil, nil, resp, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return fail(err)
	}
	br := bufio.NewReader(c)
	if _, err := c.Write(append(b, '\n')); err != nil {
		// A daemon that refuses the peer answers at once and closes without reading
		// the request: its answer, already here, says why.
		if r, rerr := readAnswer(br); rerr == nil && r.Error != "" {
			return fail(&Error{Msg: r.Error, Usage: r.Usage})
		}
		return fail(fmt.Errorf("send request: %w", err))
	}
	resp, err = readAnswer(br)
	if err != nil {
		return fail(err)
	}
	if resp.Error != "" {
		return fail(&Error{Msg: resp.Error, Usage: resp.Usage})
	}
	return c, br, resp, nil
}

// readAnswer reads the daemon's one-line answer.
func readAnswer(br *bufio.Reader) (Response, error) {
	var resp Response
	line, err := br.ReadBytes('\n')
	if err != nil {
		return resp, fmt.Errorf("read the daemon's answer: %w", err)
	}
	if err := json.Unmarshal(line, &resp); err != nil {
		return resp, fmt.Errorf("read the daemon's answer: %w", err)
	}
	return resp, nil
}
