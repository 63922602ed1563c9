package config

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"

	"github.com/uiod/uiod/internal/clip"
)

// EnvPrefix starts the name of every environment variable that overrides a key: the key
// upper-cased with dots turned into underscores, such as UIOD_POLL_MODE for poll.mode.
// Every scalar key can be overridden, and poll.cpus (as a CPU list, "0-3,6"); an
// environment variable set to the empty string sets the key to "" (UIOD_METRICS_LISTEN=
// turns metrics off).
const EnvPrefix = "UIOD_"

// Loader reads configurations. Its zero value reads the process environment and checks
// the configuration against this machine.
type Loader struct {
	// Host is the machine the configuration is checked against; nil means
	// LocalHostAt(Root).
	Host *Host
	// Root is the host root (a --root prefix; "" means "/"): the machine is described
	// from files under it (/proc/meminfo), and state_dir and unix wire sockets must
	// resolve inside it (see Config.CheckHostPaths).
	Root string
	// LookupEnv reads environment overrides; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// CheckDevices checks each PCI port that exists under Root against its nic: (see
	// Config.CheckDevices), as `uiod config validate` and `uiod bind --config` do.
	CheckDevices bool
}

// Load reads, completes and validates the configuration file at path; "-" reads standard
// input. See Loader.Read.
func Load(path string) (*Config, error) { return Loader{}.Load(path) }

// Read reads, completes and validates a configuration. See Loader.Read.
func Read(r io.Reader) (*Config, error) { return Loader{}.Read(r) }

// Load reads, completes and validates the configuration file at path; "-" reads standard
// input.
func (l Loader) Load(path string) (*Config, error) {
	if path == "-" {
		return l.Read(os.Stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			// The path is the user's: quote a bounded prefix of it.
			pe.Path = clip.String(pe.Path)
		}
		return nil, fmt.Errorf("open config: %w", err)
	}
	defer f.Close()
	return l.Read(f)
}

// Read reads a YAML configuration from r, applies the environment overrides, fills in
// defaults and validates the result. A document that is not YAML gives a *ParseError;
// unknown keys, values of the wrong type and every validation problem are reported
// together in one *ValidationError.
func (l Loader) Read(r io.Reader) (*Config, error) {
	doc, err := readDocument(r)
	if err != nil {
		return nil, err
	}
	return l.parse(doc)
}

// parse is Read on a document already in memory. Viper is the one layer between the
// document and Config: it is given the document's known keys (schemaTree), each
// environment override set over them, and decodes the result once, strictly (decodeHook).
func (l Loader) parse(doc []byte) (*Config, error) {
	raw, dups, err := parseDocument(doc)
	if err != nil {
		return nil, err
	}
	if len(dups) > 0 {
		return nil, dups.err()
	}
	var errs fieldErrors
	tree := schemaTree(raw, configType, "", &errs).(map[string]any)
	v := viper.New()
	if err := v.MergeConfigMap(tree); err != nil {
		return nil, &ParseError{Err: err}
	}
	lookup := l.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	fromEnv := map[string]string{} // key → environment variable
	for _, key := range envKeys {
		name := envName(key)
		if val, ok := lookup(name); ok {
			v.Set(key, val)
			fromEnv[key] = name
		}
	}

	// Decode onto the defaults: a key the file leaves out (or sets to null) keeps its
	// default, one it sets explicitly, even to 0, is checked as given.
	c := Default()
	if ports, ok := tree["ports"].([]any); ok {
		c.Ports = make([]Port, len(ports))
		for i := range c.Ports {
			c.Ports[i] = DefaultPort()
		}
	}
	err = v.UnmarshalExact(c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = mapstructure.DecodeHookFuncType(decodeHook)
		dc.WeaklyTypedInput = false
	})
	errs = append(errs, decodeFieldErrors(err)...)
	c.resolvePCIEnv(lookup, &errs)
	c.resolveAFXDPMTU(tree)
	for i := range c.Ports {
		if c.Ports[i].Interrupts == "" {
			c.Ports[i].Interrupts = defaultInterrupts(c.Ports[i].Driver)
		}
	}
	c.assignSimAddrs()
	_, inFile := tree["state_dir"]
	if _, inEnv := fromEnv["state_dir"]; !inEnv && !inFile {
		if dir := c.userStateDir(lookup); dir != "" {
			c.StateDir = dir
		}
	}

	host := l.Host
	if host == nil {
		root := l.Root
		if root == "" {
			root = "/"
		}
		h := LocalHostAt(root)
		host = &h
	}
	// A value that failed to decode has already been reported; what validation says
	// about the default left in its place would only confuse.
	decoded := pathsOf(errs)
	checks := append(c.check(*host), c.checkHostPaths(l.Root)...)
	if l.CheckDevices {
		checks = append(checks, c.checkDevices(l.Root)...)
	}
	for _, fe := range checks {
		if !decoded.covers(fe.Path) {
			errs = append(errs, fe)
		}
	}
	if len(errs) == 0 {
		return c, nil
	}
	for key, name := range fromEnv {
		for i := range errs {
			if inside(errs[i].Path, key) {
				errs[i].Msg += " (from $" + name + ")"
			}
		}
	}
	return nil, errs.err()
}

// pathSet is a set of key paths.
type pathSet map[string]bool

func pathsOf(errs fieldErrors) pathSet {
	s := pathSet{}
	for _, e := range errs {
		s[e.Path] = true
	}
	return s
}

// covers reports whether path is, or is inside, one of the paths of s.
func (s pathSet) covers(path string) bool {
	for i := len(path); i > 0; i-- {
		if (i == len(path) || path[i] == '.' || path[i] == '[') && s[path[:i]] {
			return true
		}
	}
	return false
}

// inside reports whether path is parent or inside it.
func inside(path, parent string) bool {
	return path == parent || strings.HasPrefix(path, parent) && (path[len(parent)] == '.' || path[len(parent)] == '[')
}

// decodeFieldErrors turns the decoder's error into FieldErrors: mapstructure joins one
// *DecodeError for each value it refused (and wraps the join in one more error).
func decodeFieldErrors(err error) fieldErrors {
	var errs fieldErrors
	switch e := err.(type) {
	case nil:
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			errs = append(errs, decodeFieldErrors(inner)...)
		}
	case *mapstructure.DecodeError:
		var hookErr *decodeError
		if errors.As(e.Unwrap(), &hookErr) {
			errs.add(e.Name(), hookErr.value, "%s", hookErr.msg)
		} else {
			errs.add(cmp.Or(e.Name(), "(config)"), nil, "%s", e.Unwrap().Error())
		}
	default:
		if inner := errors.Unwrap(err); inner != nil {
			return decodeFieldErrors(inner)
		}
		errs.add("(config)", nil, "%s", err.Error())
	}
	return errs
}

// joinPath appends key to the path of its parent mapping; a key that is empty or not a
// plain word is quoted.
func joinPath(parent, key string) string {
	if checkName(key) != nil || strings.ContainsAny(key, ".") {
		key = strconv.Quote(key)
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// envKeys are the keys environment variables can override: every scalar key outside
// ports, and poll.cpus.
var envKeys = scalarKeys(configType, "")

func scalarKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := joinPath(prefix, f.Tag.Get("mapstructure"))
		switch {
		case f.Type == intSliceType, reflect.PointerTo(f.Type).Implements(textUnmarshalerType):
			keys = append(keys, key)
		case f.Type.Kind() == reflect.Struct:
			keys = append(keys, scalarKeys(f.Type, key)...)
		case f.Type.Kind() != reflect.Slice && f.Type.Kind() != reflect.Map:
			keys = append(keys, key)
		}
	}
	return keys
}

// envName is the environment variable that overrides key.
func envName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}
