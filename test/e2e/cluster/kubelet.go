package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
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

// cadvisorPod is one pod on the node's /metrics/cadvisor page: its counters from the load model
// and what the kubelet knows of it besides (its UID, QoS class and containers' images), from
// which cAdvisor's cgroup path and container ID labels are made.
type cadvisorPod struct {
	PodSample
	UID      string
	QOSClass corev1.PodQOSClass
	// Images maps a container's name to its image.
	Images map[string]string
}

// renderCadvisorMetrics writes the kubelet's /metrics/cadvisor page for one node as a kubelet
// with containerd and the systemd cgroup driver serves it, reduced to the two series a
// cluster's Prometheus reads for pod usage: container_cpu_usage_seconds_total (a counter, the
// integral of the modelled usage) and container_memory_working_set_bytes, each stamped with the
// scrape time. As in a real cluster there is a series per container (container, image, name:
// the runtime's container ID), one per pod cgroup (container="", the sum of its containers) and
// one for the node's root cgroup (id="/"): queries for containers must filter container!="".
// Containers split a pod's usage as on /metrics/resource.
func renderCadvisorMetrics(pods []cadvisorPod, nodeCPUSeconds float64, nodeMemoryBytes int64, now time.Time) []byte {
	type series struct {
		id, container, image, name, ns, pod string
		cpu                                 float64
		mem                                 int64
	}
	all := []series{{id: "/", cpu: nodeCPUSeconds, mem: nodeMemoryBytes}}
	for _, p := range pods {
		cgroup := podCgroup(p.UID, p.QOSClass)
		podSeries := series{id: cgroup, ns: p.Namespace, pod: p.Name}
		var containers []series
		for i, c := range p.Containers {
			cid := containerID(p.UID, c)
			s := series{id: cgroup + "/cri-containerd-" + cid + ".scope", container: c, image: p.Images[c], name: cid, ns: p.Namespace, pod: p.Name, cpu: p.CPUSeconds, mem: p.MemoryBytes}
			if i > 0 {
				s.cpu = float64(idleCPUMilli) / 1000 * now.Sub(p.StartTime).Seconds()
				s.mem = idleMemoryBytes
			}
			podSeries.cpu += s.cpu
			podSeries.mem += s.mem
			containers = append(containers, s)
		}
		all = append(all, podSeries)
		all = append(all, containers...)
	}
	ts := now.UnixMilli()
	var b bytes.Buffer
	labels := func(s series) string {
		return fmt.Sprintf("container=%q,id=%q,image=%q,name=%q,namespace=%q,pod=%q", s.container, s.id, s.image, s.name, s.ns, s.pod)
	}
	fmt.Fprintf(&b, "# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.\n# TYPE container_cpu_usage_seconds_total counter\n")
	for _, s := range all {
		fmt.Fprintf(&b, "container_cpu_usage_seconds_total{%s} %s %d\n", labels(s), exact(s.cpu), ts)
	}
	fmt.Fprintf(&b, "# HELP container_memory_working_set_bytes Current working set in bytes.\n# TYPE container_memory_working_set_bytes gauge\n")
	for _, s := range all {
		fmt.Fprintf(&b, "container_memory_working_set_bytes{%s} %d %d\n", labels(s), s.mem, ts)
	}
	return b.Bytes()
}

// podCgroup is the systemd cgroup driver's slice of a pod: kubepods.slice, then its QoS
// class's slice (none for Guaranteed), then the pod's, its UID with underscores.
func podCgroup(uid string, qos corev1.PodQOSClass) string {
	u := strings.ReplaceAll(uid, "-", "_")
	switch qos {
	case corev1.PodQOSGuaranteed:
		return "/kubepods.slice/kubepods-pod" + u + ".slice"
	case corev1.PodQOSBestEffort:
		return "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + u + ".slice"
	default:
		return "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + u + ".slice"
	}
}

// containerID is the runtime's ID of a pod's container (64 hex digits like containerd's),
// derived from the pod's UID so that the status and /metrics/cadvisor agree without storing it.
func containerID(podUID, container string) string {
	sum := sha256.Sum256([]byte(podUID + "/" + container))
	return hex.EncodeToString(sum[:])
}
