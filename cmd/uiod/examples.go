package main

import "github.com/spf13/cobra"

// addExamples sets each command's Examples section (--help and the man pages).
func addExamples(root *cobra.Command) {}
