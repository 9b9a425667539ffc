package cluster

import (
	"bytes"
	"fmt"
	"strconv"
	"time"
)

// renderResourceMetrics writes the kubelet's /metrics/resource page for one node the way
// metrics-server v0.8 parses it: cumulative CPU seconds and working-set bytes per node and per
// container, plus each container's start time (metrics-server's reset detection). The first
// container of a pod carries the pod's usage; further containers report the idle floor.
func renderResourceMetrics(pods []PodSample, nodeCPUSeconds float64, nodeMemoryBytes int64, now time.Time) []byte {
	ts := now.UnixMilli()
	var b bytes.Buffer
	fmt.Fprintf(&b, "# HELP node_cpu_usage_seconds_total Cumulative cpu time consumed by the node in core-seconds\n# TYPE node_cpu_usage_seconds_total counter\n")
	fmt.Fprintf(&b, "node_cpu_usage_seconds_total %s %d\n", exact(nodeCPUSeconds), ts)
	fmt.Fprintf(&b, "# HELP node_memory_working_set_bytes Current working set of the node in bytes\n# TYPE node_memory_working_set_bytes gauge\n")
	fmt.Fprintf(&b, "node_memory_working_set_bytes %d %d\n", nodeMemoryBytes, ts)

	type series struct {
		ns, pod, container string
		cpu                float64
		mem                int64
		start              time.Time
	}
	var all []series
	for _, p := range pods {
		for i, c := range p.Containers {
			s := series{ns: p.Namespace, pod: p.Name, container: c, cpu: p.CPUSeconds, mem: p.MemoryBytes, start: p.StartTime}
			if i > 0 {
				s.cpu = float64(idleCPUMilli) / 1000 * now.Sub(p.StartTime).Seconds()
				s.mem = idleMemoryBytes
			}
			all = append(all, s)
		}
	}
	fmt.Fprintf(&b, "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed by the container in core-seconds\n# TYPE container_cpu_usage_seconds_total counter\n")
	for _, s := range all {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{container=%q,namespace=%q,pod=%q} %s %d\n", s.container, s.ns, s.pod, exact(s.cpu), ts)
	}
	fmt.Fprintf(&b, "# HELP container_memory_working_set_bytes Current working set of the container in bytes\n# TYPE container_memory_working_set_bytes gauge\n")
	for _, s := range all {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{container=%q,namespace=%q,pod=%q} %d %d\n", s.container, s.ns, s.pod, s.mem, ts)
	}
	fmt.Fprintf(&b, "# HELP container_start_time_seconds Start time of the container since unix epoch in seconds\n# TYPE container_start_time_seconds gauge\n")
	for _, s := range all {
		fmt.Fprintf(&b, "container_start_time_seconds{container=%q,namespace=%q,pod=%q} %d %d\n", s.container, s.ns, s.pod, s.start.Unix(), ts)
	}
	fmt.Fprintf(&b, "# HELP scrape_error 1 if there was an error while getting container metrics, 0 otherwise\n# TYPE scrape_error gauge\nscrape_error 0\n")
	return b.Bytes()
}

// exact prints a counter without rounding: metrics-server divides differences of counters that
// grow into the thousands by 10s intervals, so six significant digits would cost whole millicores.
func exact(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
