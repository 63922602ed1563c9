package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples are the Examples sections of --help and the man pages, by command path
// without the leading "uiod". A command that sets its own Example keeps it.
var examples = map[string]string{
	"": `  uiod devices                                  # the NICs and their drivers
  uiod latency --sim                            # the idle-policy demo on model NICs
  uiod config validate /etc/uiod/uiod.yaml
  uiod bind --config /etc/uiod/uiod.yaml && uiod run --config /etc/uiod/uiod.yaml
  uiod status --watch`,
	"bind": `  uiod bind --driver vfio-pci --dry-run 0000:03:00.0   # print the sysfs writes only
  uiod bind --driver vfio-pci ens3f0 ens3f1           # interface names, as dpdk-devbind
  uiod bind --config /etc/uiod/uiod.yaml               # every PCI port to its driver
  uiod bind --driver igb 0000:03:00.0                  # give it back to a kernel driver`,
	"unbind": `  uiod unbind --config /etc/uiod/uiod.yaml --restore   # back to the recorded drivers
  uiod unbind --dry-run --restore 0000:03:00.0
  uiod unbind ens3f0`,
	"quiesce": `  uiod quiesce --dry-run 0000:03:00.0        # the config-space writes it would make
  uiod quiesce --config /etc/uiod/uiod.yaml   # after a SIGKILLed or crashed daemon`,
	"devices": `  uiod devices                       # network functions, like dpdk-devbind --status
  uiod devices --all --json | jq '.[] | select(.driver == "")'
  uiod devices --driver vfio-pci     # what is bound for userspace
  uiod devices --driver none         # functions without a driver
  uiod devices ens3f0 0000:04:00.0   # only these`,
	"run": `  uiod run --config /etc/uiod/uiod.yaml
  uiod run --config examples/sim-unix.yaml --log-level debug   # model ports, no hardware
  UIOD_POLL_MODE=busy uiod run --config /etc/uiod/uiod.yaml     # override one key`,
	"status": `  uiod status                                # ports and poll threads, 80 columns
  uiod status --wide                         # every column
  uiod status --watch --interval 2s          # refresh in place, like top
  uiod status --json | jq '.threads[] | {index, cpu_percent, idle_threshold_seconds}'
  uiod status --metrics 127.0.0.1:9478`,
	"latency": `  uiod latency --sim                                   # every idle policy on two model 82599s
  uiod latency --sim --nic igb --policies busy,auto --duration 2s --plot lat.svg
  uiod latency --sim --pattern poisson:10kpps --json - | jq '.[] | {policy, cpu_percent}'
  uiod latency --tx unix:/tmp/uiod-gen0.sock,/tmp/uiod-sim0.sock \
               --rx unix:/tmp/uiod-gen1.sock,/tmp/uiod-sim1.sock --csv hist.csv`,
	"config": `  uiod config example > uiod.yaml
  uiod config validate uiod.yaml`,
	"config validate": `  uiod config validate /etc/uiod/uiod.yaml
  uiod config example | uiod config validate -
  UIOD_POLL_MODE=sleep uiod config validate /etc/uiod/uiod.yaml   # with an override`,
	"config example": `  uiod config example > /etc/uiod/uiod.yaml
  uiod config example | grep -A3 '^poll:'`,
	"man": `  uiod man /tmp/man && man /tmp/man/uiod-bind.8
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) uiod man build/man   # reproducible dates`,
	"version": `  uiod version`,
	"help": `  uiod help bind
  uiod help config validate`,
	"completion": `  uiod completion bash > /etc/bash_completion.d/uiod
  source <(uiod completion bash)`,
	"completion bash": `  source <(uiod completion bash)
  uiod completion bash > /etc/bash_completion.d/uiod`,
	"completion zsh":        `  uiod completion zsh > "${fpath[1]}/_uiod"`,
	"completion fish":       `  uiod completion fish > ~/.config/fish/completions/uiod.fish`,
	"completion powershell": `  uiod completion powershell | Out-String | Invoke-Expression`,
}

// addExamples sets the Examples section of cmd and its subcommands from examples.
func addExamples(cmd *cobra.Command) {
	path := strings.TrimPrefix(strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()), " ")
	if ex, ok := examples[path]; ok && cmd.Example == "" {
		cmd.Example = ex
	}
	for _, sub := range cmd.Commands() {
		addExamples(sub)
	}
}
