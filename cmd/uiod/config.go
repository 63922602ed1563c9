package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/uiod/uiod/config"
	"github.com/uiod/uiod/internal/clip"
	"github.com/uiod/uiod/l3fwd/lpm"
)

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check daemon configuration files or print an example",
		Args:  cobra.NoArgs,
		RunE:  wantSubcommand,
	}
	cmd.AddCommand(newConfigValidateCmd(g), newConfigExampleCmd())
	return cmd
}

func newConfigValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE|- ...",
		Short: "Check configuration files as `uiod run` would load them",
		Long: `Check configuration files as "uiod run" would load them: YAML syntax, unknown keys,
types, and every rule, with UIOD_* environment overrides applied, CPUs checked against
this machine and DMA memory against its limits (hugepages from <root>/proc/meminfo), and
each PCI port whose function exists under <root>/sys against its nic: (the NIC driver
must drive the function's vendor:device; the error names the nic: that does).
"-" reads standard input.

Prints "FILE: ok" for a good file (with, for a port of another MTU than 1500, the frames
it carries and the DMA memory its buffers take; for l3fwd, what its route tables may take
at forward.max_routes), and every problem of a bad one on
standard error, one per line, naming the key. Exits 2 if any file is bad.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad, failed := 0, 0
			for _, arg := range args {
				switch validateConfig(config.Loader{Root: g.root, CheckDevices: true}, cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), arg) {
				case configInvalid:
					bad++
				case configUnreadable:
					failed++
				}
			}
			switch {
			case failed > 0 && len(args) == 1:
				return fmt.Errorf("%s: could not be read", configName(args[0]))
			case failed > 0:
				return fmt.Errorf("%d of %d configuration files could not be read (%d invalid)", failed, len(args), bad)
			case bad == 0:
				return nil
			case len(args) == 1:
				return usagef("%s: invalid configuration", configName(args[0]))
			}
			return usagef("%d of %d configuration files are invalid", bad, len(args))
		},
	}
}

// Outcomes of validating one configuration file.
const (
	configOK         = iota
	configInvalid    // the content is wrong (exit 2)
	configUnreadable // reading it failed (exit 1)
)

// validateConfig loads one file ("-" for stdin) with l, reports the result and says how
// it went.
func validateConfig(l config.Loader, stdout, stderr io.Writer, stdin io.Reader, arg string) int {
	name := configName(arg)
	var cfg *config.Config
	var err error
	if arg == "-" {
		cfg, err = l.Read(stdin)
	} else {
		cfg, err = l.Load(arg)
	}
	var ve *config.ValidationError
	switch {
	case err == nil:
		fmt.Fprintf(stdout, "%s: ok\n", name)
		writeMemlock(stdout, name, cfg, l.Root)
		writeMTUs(stdout, name, cfg, l.Root)
		writeRouteTables(stdout, name, cfg)
		return configOK
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			fmt.Fprintf(stderr, "%s: %v\n", name, fe)
		}
	default:
		fmt.Fprintf(stderr, "%s: %s\n", name, clip.Tokens(err.Error()))
	}
	if isConfigError(err) {
		return configInvalid
	}
	return configUnreadable
}

// isConfigError reports whether a config.Load error is the user's (exit 2): a file that
// does not exist, is not YAML, is over the limits or does not validate. Any other
// failure to read the file (permissions, a directory, an I/O error) is not.
func isConfigError(err error) bool {
	var ve *config.ValidationError
	var pe *config.ParseError
	return errors.As(err, &ve) || errors.As(err, &pe) || errors.Is(err, fs.ErrNotExist)
}

// configLoadError returns err, the failure to load the configuration at path, as a usage
// error (exit 2) when it is the configuration's fault and as a failure (exit 1) otherwise.
func configLoadError(path string, err error) error {
	err = fmt.Errorf("%s: %w", configName(path), err)
	if isConfigError(err) {
		return asUsage(err)
	}
	return err
}

// configName names a configuration argument in messages: "<stdin>" for "-", else the
// path, quoted up to a bounded prefix.
func configName(arg string) string {
	if arg == "-" {
		return "<stdin>"
	}
	return clip.String(arg)
}

func newConfigExampleCmd() *cobra.Command {
	var l3fwd, bridge, router bool
	cmd := &cobra.Command{
		Use:   "example [--l3fwd | --router | --bridge]",
		Short: "Print a complete, commented configuration that validates",
		Example: `  uiod config example > /etc/uiod/uiod.yaml
  uiod config example --l3fwd   # a router: routes, and a kernel exception path
  uiod config example --router  # a router whose routes come from the kernel (BIRD, FRR)
  uiod config example --bridge  # a switch: access and trunk ports, limits, a static MAC`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ex := config.Example()
			switch {
			case l3fwd && bridge, l3fwd && router, router && bridge:
				return usagef("--l3fwd, --router and --bridge: choose one example")
			case router:
				ex = config.ExampleRouter()
			case l3fwd:
				ex = config.ExampleL3fwd()
			case bridge:
				ex = config.ExampleBridge()
			}
			_, err := io.WriteString(cmd.OutOrStdout(), ex)
			return err
		},
	}
	cmd.Flags().BoolVar(&l3fwd, "l3fwd", false, "the l3fwd example: routing between two sim ports, one with a kernel exception path")
	cmd.Flags().BoolVar(&router, "router", false, "the router example: l3fwd between two ports with kernel TAPs, its routes from the kernel's table")
	cmd.Flags().BoolVar(&bridge, "bridge", false, "the bridge example: a learning switch of three sim ports in two VLANs")
	return cmd
}

// ruleBytes is about what the route list of an LPM table takes per route beside its
// lookup tables (the heap BenchmarkLookup4 measures less the tables, over 1 M routes).
const ruleBytes = 56

// writeRouteTables prints, for forward.mode l3fwd, what its route tables may take at
// forward.max_routes and max_routes6, and with routes from the kernel, while an update
// holds two generations at once.
func writeRouteTables(w io.Writer, name string, cfg *config.Config) {
	if cfg.Forward.Mode != config.ForwardL3fwd {
		return
	}
	max4, max6 := cfg.Forward.RouteLimits()
	n4, n6 := lpm.Need4(max4), lpm.Need6(max6, 48)
	all6 := lpm.Need6(max6, 128)
	rules := int64(max4+max6) * ruleBytes
	one := n4.First + n4.Groups + n6.First + n6.Groups + rules
	fmt.Fprintf(w, "%s: l3fwd tables at forward.max_routes %d and max_routes6 %d:\n", name, max4, max6)
	fmt.Fprintf(w, "  IPv4: first level %s (64 MiB, and 2 MiB to align it for huge pages), groups up to %s (1 KiB for each route longer than /24)\n",
		sizeString(n4.First), sizeString(n4.Groups))
	fmt.Fprintf(w, "  IPv6: first level %s, groups up to %s with routes of /48 or shorter (4 KiB a route), %s with longer ones\n",
		sizeString(n6.First), sizeString(n6.Groups), sizeString(all6.Groups))
	fmt.Fprintf(w, "  route lists: about %s (%d bytes a route)\n", sizeString(rules), ruleBytes)
	if cfg.Forward.RoutesFrom == config.RoutesFromKernel {
		fmt.Fprintf(w, "  in all up to %s; an update from the kernel copies the tables it changes, so two generations live at once: up to %s\n",
			sizeString(one), sizeString(2*(one-rules)+rules))
		return
	}
	fmt.Fprintf(w, "  in all up to %s (static routes: one generation)\n", sizeString(one))
}

// sizeString is n bytes in KiB, MiB or GiB.
func sizeString(n int64) string {
	switch {
	case n >= 10<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 10<<20:
		return fmt.Sprintf("%d MiB", (n+1<<19)>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", (n+1<<9)>>10)
}
