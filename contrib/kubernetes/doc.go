// Package kubernetes holds uiod's Kubernetes manifests (node-agent.yaml, vf-pod.yaml) and
// the test that decodes them strictly against the Kubernetes API types. It has no code:
// it is a package of its own so that the Kubernetes modules stay out of uiod's binary.
package kubernetes
