package wire

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/uiod/uiod/internal/clip"
)

// Kind names a wire transport in a Spec.
type Kind string

// The transports a Spec can name.
const (
	KindPair     Kind = "pair"     // pair:NAME — the two ends of a named in-memory wire
	KindUnix     Kind = "unix"     // unix:LOCAL,REMOTE — unix datagram sockets (QEMU dgram)
	KindAFPacket Kind = "afpacket" // afpacket:IFNAME — AF_PACKET raw socket on an interface
	KindTAP      Kind = "tap"      // tap:IFNAME — a TAP interface
)

// Spec is a parsed wire specification such as "unix:/run/a.sock,/run/b.sock".
type Spec struct {
	Kind Kind
	// Name is the pair name (KindPair) or the interface name (KindAFPacket, KindTAP).
	Name string
	// Local and Remote are the socket paths of a KindUnix wire: the path this end binds and
	// the path it sends to.
	Local, Remote string
}

// String returns the spec in the form Parse accepts.
func (s Spec) String() string {
	if s.Kind == KindUnix {
		return string(s.Kind) + ":" + s.Local + "," + s.Remote
	}
	return string(s.Kind) + ":" + s.Name
}

// maxUnixPath is the longest path a sockaddr_un holds (108 bytes with the NUL).
const maxUnixPath = 107

// maxPairName bounds an in-memory wire's name, as port names are bounded: a name is a
// key that logs and progress lines print.
const maxPairName = 64

// SpecError is Parse's error: the specification and what is wrong with it.
type SpecError struct {
	Spec string
	Err  error
}

// Error is "wire SPEC: what is wrong", the spec quoted.
func (e *SpecError) Error() string { return "wire " + clip.Quote(e.Spec) + ": " + e.Err.Error() }

// Unwrap returns what is wrong.
func (e *SpecError) Unwrap() error { return e.Err }

// Parse parses a wire specification: pair:NAME, unix:LOCAL,REMOTE, afpacket:IFNAME or
// tap:IFNAME. It opens nothing. An error is a *SpecError.
func Parse(spec string) (Spec, error) {
	s, err := parse(spec)
	if err != nil {
		return Spec{}, &SpecError{Spec: spec, Err: err}
	}
	return s, nil
}

func parse(spec string) (Spec, error) {
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok {
		return Spec{}, errors.New("want KIND:ARGS with KIND pair, unix, afpacket or tap")
	}
	s := Spec{Kind: Kind(kind)}
	switch s.Kind {
	case KindPair:
		if rest == "" {
			return Spec{}, errors.New("empty pair name")
		}
		if len(rest) > maxPairName {
			return Spec{}, fmt.Errorf("pair name is longer than %d bytes", maxPairName)
		}
		for _, r := range rest {
			if unicode.IsSpace(r) || !unicode.IsPrint(r) {
				return Spec{}, errors.New("pair name has a space or unprintable character")
			}
		}
		s.Name = rest
	case KindUnix:
		parts := strings.Split(rest, ",")
		if len(parts) != 2 {
			return Spec{}, errors.New("want unix:LOCAL,REMOTE")
		}
		for _, p := range parts {
			if p == "" || strings.ContainsRune(p, 0) || len(p) > maxUnixPath {
				return Spec{}, fmt.Errorf("socket path %s is empty, contains NUL or is longer than %d bytes", clip.Quote(p), maxUnixPath)
			}
		}
		if parts[0] == parts[1] {
			return Spec{}, errors.New("local and remote are the same path")
		}
		s.Local, s.Remote = parts[0], parts[1]
	case KindAFPacket, KindTAP:
		if err := checkIfName(rest); err != nil {
			return Spec{}, err
		}
		s.Name = rest
	default:
		return Spec{}, fmt.Errorf("unknown kind %s (want pair, unix, afpacket or tap)", clip.Quote(kind))
	}
	return s, nil
}

// checkIfName applies the kernel's rules for interface names (dev_valid_name).
func checkIfName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty interface name")
	case len(name) > 15:
		return fmt.Errorf("interface name %s is longer than 15 bytes", clip.Quote(name))
	case name == "." || name == "..":
		return fmt.Errorf("interface name %s is not allowed", clip.Quote(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == '/' || c == ':' || c == 0 || c == ' ' || (c >= '\t' && c <= '\r') {
			return fmt.Errorf("interface name %s contains %q", clip.Quote(name), c)
		}
	}
	return nil
}

// Open opens the wire s describes. For KindPair the first Open of a name creates an
// in-memory Pair and returns one end; the next Open of the same name returns the other end
// and forgets the name, so a third Open starts a new pair.
func (s Spec) Open() (Port, error) {
	switch s.Kind {
	case KindPair:
		return openPair(s.Name), nil
	case KindUnix:
		return ListenUnix(s.Local, s.Remote)
	case KindAFPacket:
		return ListenPacket(s.Name)
	case KindTAP:
		return OpenTAP(s.Name)
	}
	return nil, fmt.Errorf("wire %s: unknown kind %q", s, s.Kind)
}

// Open parses spec and opens the wire it describes.
func Open(spec string) (Port, error) {
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	return s.Open()
}

// pairs is the process-wide registry of named in-memory wires whose second end nobody has
// opened yet.
var pairs struct {
	sync.Mutex
	waiting map[string]Port
}

func openPair(name string) Port {
	pairs.Lock()
	defer pairs.Unlock()
	if p, ok := pairs.waiting[name]; ok {
		delete(pairs.waiting, name)
		return p
	}
	a, b := Pair()
	if pairs.waiting == nil {
		pairs.waiting = make(map[string]Port)
	}
	pairs.waiting[name] = b
	return a
}
