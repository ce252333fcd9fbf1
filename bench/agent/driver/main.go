// Command driver feeds a running `vitals agent` with CNI results at a fixed rate, through its report
// socket or as kubelet FailedCreatePodSandBox Events in the Kubernetes API, and samples the agent's
// resident memory (VmRSS) while doing so. bench/agent/run.sh drives it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/agent"
)

func main() {
	mode := flag.String("mode", "idle", "idle, socket or kube")
	pid := flag.Int("pid", 0, "pid of the agent whose memory is sampled")
	rate := flag.Int("rate", 100, "events per second")
	duration := flag.Duration("duration", 60*time.Second, "how long to drive")
	socket := flag.String("socket", agent.DefaultSocketPath, "agent report socket (mode socket)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig (mode kube)")
	node := flag.String("node", "", "node name the events are about (mode kube)")
	namespace := flag.String("namespace", "default", "namespace of the events (mode kube)")
	flag.Parse()
	if err := run(*mode, *pid, *rate, *duration, *socket, *kubeconfig, *node, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func run(mode string, pid, rate int, duration time.Duration, socket, kubeconfig, node, ns string) error {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var send func(i int) error
	switch mode {
	case "idle":
		send = nil
	case "socket":
		send = func(i int) error {
			r := agent.Report{Op: agent.OpAdd, Result: agent.Failure, Pod: fmt.Sprintf("bench/pod-%d", i), Error: "failed to allocate for range 0: no IP addresses available in range set"}
			if i%2 == 1 {
				r.Result, r.Error = agent.Success, ""
			}
			_, err := agent.Send(context.Background(), socket, r)
			return err
		}
	case "kube":
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return err
		}
		cfg.QPS, cfg.Burst = float32(rate*2), rate*2
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		send = func(i int) error {
			now := metav1.Now()
			pod := fmt.Sprintf("pod-%d", i)
			_, err := c.CoreV1().Events(ns).Create(context.Background(), &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: pod + ".", Namespace: ns},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod, APIVersion: "v1"},
				Reason:         "FailedCreatePodSandBox",
				Message:        `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox: plugin type="bridge" failed (add): failed to allocate for range 0`,
				Source:         corev1.EventSource{Component: "kubelet", Host: node},
				FirstTimestamp: now, LastTimestamp: now, Count: 1, Type: corev1.EventTypeWarning,
			}, metav1.CreateOptions{})
			return err
		}
	default:
		return fmt.Errorf("unknown mode %q", mode)
	}
	var maxRSS, lastRSS uint64
	sample := func() {
		if v, err := rss(pid); err == nil {
			lastRSS = v
			maxRSS = max(maxRSS, v)
		}
	}
	sampleT := time.NewTicker(250 * time.Millisecond)
	defer sampleT.Stop()
	var tick <-chan time.Time
	if send != nil {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		tick = t.C
	}
	sent, errs := 0, 0
	var firstErr error
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			sample()
			el := time.Since(start).Seconds()
			fmt.Printf("mode=%s sent=%d errors=%d rate=%.1f/s rss_end_kib=%d rss_max_kib=%d hwm_kib=%d\n",
				mode, sent, errs, float64(sent)/el, lastRSS/1024, maxRSS/1024, hwm(pid)/1024)
			if firstErr != nil {
				fmt.Fprintln(os.Stderr, "first error:", firstErr)
			}
			return nil
		case <-sampleT.C:
			sample()
		case <-tick:
			if err := send(sent); err != nil {
				errs++
				if firstErr == nil {
					firstErr = err
				}
			}
			sent++
		}
	}
}

func statusKB(pid int, field string) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no %s", field)
}

func rss(pid int) (uint64, error) { return statusKB(pid, "VmRSS") }
func hwm(pid int) uint64          { v, _ := statusKB(pid, "VmHWM"); return v }
