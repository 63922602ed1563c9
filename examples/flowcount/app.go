package main

import (
	"net/netip"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/uiod/uiod/dataplane"
)

// flowApp is a dataplane.App that counts frames per IPv4 5-tuple, one table per poll
// thread (no locks, no atomics shared between threads), and forwards every frame to its
// queue's peer as l2fwd does.
type flowApp struct {
	tables []*flowTable // by poll thread
}

func newFlowApp(threads, flowsPerThread int) *flowApp {
	a := &flowApp{}
	for range threads {
		a.tables = append(a.tables, newFlowTable(flowsPerThread))
	}
	return a
}

// Process implements dataplane.App.
func (a *flowApp) Process(b *dataplane.Burst) {
	t := a.tables[b.Thread]
	for _, f := range b.Frames {
		if k, ok := parseFlow(f.Bytes()); ok {
			t.count(k)
		}
	}
	b.SendAll(b.Peer)
}

// flows sums every thread's table.
func (a *flowApp) flows() map[flowKey]uint64 {
	m := map[flowKey]uint64{}
	for _, t := range a.tables {
		t.each(func(k flowKey, n uint64) { m[k] += n })
	}
	return m
}

var (
	flowPackets = prometheus.NewDesc("uiod_example_flow_packets_total", "Frames seen per IPv4 TCP/UDP flow.",
		[]string{"src", "dst", "sport", "dport", "proto"}, nil)
	flowCount = prometheus.NewDesc("uiod_example_flows", "IPv4 TCP/UDP flows seen.", nil, nil)
)

// Describe implements prometheus.Collector.
func (a *flowApp) Describe(ch chan<- *prometheus.Desc) {
	ch <- flowPackets
	ch <- flowCount
}

// Collect implements prometheus.Collector: one series per flow.
func (a *flowApp) Collect(ch chan<- prometheus.Metric) {
	flows := a.flows()
	ch <- prometheus.MustNewConstMetric(flowCount, prometheus.GaugeValue, float64(len(flows)))
	for k, n := range flows {
		ch <- prometheus.MustNewConstMetric(flowPackets, prometheus.CounterValue, float64(n),
			netip.AddrFrom4(k.src).String(), netip.AddrFrom4(k.dst).String(), strconv.Itoa(int(k.sport)), strconv.Itoa(int(k.dport)), strconv.Itoa(int(k.proto)))
	}
}
