// Package tuntap opens Linux TAP interfaces through /dev/net/tun: the one attach step the
// TAP NIC (nic/tap) and the TAP cable (wire.OpenTAP) share. It is Linux only; elsewhere
// it is empty.
package tuntap
