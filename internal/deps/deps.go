// Package deps pins the project's third-party dependencies while the packages that use
// them are being written. It is imported by nothing and removed once every dependency has a
// real importer.
package deps

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/jaypipes/pcidb"
	_ "github.com/mdlayher/packet"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/viper"
	_ "go.uber.org/zap"
	_ "golang.org/x/sys/unix"
	_ "gonum.org/v1/plot"
)
