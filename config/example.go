package config

import _ "embed"

//go:embed example.yaml
var example string

// Example returns a complete, commented configuration that validates: two sim ports,
// each on its own in-memory wire, forwarding to each other under the adaptive policy.
func Example() string { return example }
