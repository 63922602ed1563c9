package config

import _ "embed"

//go:embed example.yaml
var example string

// Example returns a complete, commented configuration that validates: two sim ports,
// each on its own in-memory wire, forwarding to each other under the adaptive policy.
func Example() string { return example }

//go:embed example_l3fwd.yaml
var exampleL3fwd string

// ExampleL3fwd returns a commented configuration that validates: l3fwd routing between
// two sim ports, one with a kernel exception path.
func ExampleL3fwd() string { return exampleL3fwd }

//go:embed example_bridge.yaml
var exampleBridge string

// ExampleBridge returns a commented configuration that validates: a learning bridge of
// three sim ports, two access ports of different VLANs and a trunk.
func ExampleBridge() string { return exampleBridge }

//go:embed example_router.yaml
var exampleRouter string

// ExampleRouter returns a commented configuration that validates: l3fwd between two
// ports with kernel TAPs, its routes and neighbours from the kernel (routes_from: kernel).
func ExampleRouter() string { return exampleRouter }
