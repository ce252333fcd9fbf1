// Command driver feeds a running node agent (`vitals-agent`) with CNI results at a fixed rate, through its report
// socket or as kubelet FailedCreatePodSandBox Events in the Kubernetes API, or floods its report socket with
// connections that send nothing (mode flood), and samples the agent's resident memory (VmRSS) while doing so.
// bench/agent/run.sh drives it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/cnireport"
)

func main() {
	mode := flag.String("mode", "idle", "idle, socket or kube")
	pid := flag.Int("pid", 0, "pid of the agent whose memory is sampled")
	rate := flag.Int("rate", 100, "events per second")
	duration := flag.Duration("duration", 60*time.Second, "how long to drive")
	socket := flag.String("socket", cnireport.DefaultSocketPath, "agent report socket (mode socket)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig (mode kube)")
	node := flag.String("node", "", "node name the events are about (mode kube)")
	namespace := flag.String("namespace", "default", "namespace of the events (mode kube)")
	pods := flag.Int("pods", 20, "the events name pod-0 to pod-N-1 in turn, bound to the node by nodeobj (mode kube)")
	conns := flag.Int("conns", 10000, "connections opened and held, sending nothing (mode flood)")
	flag.Parse()
	if *mode == "flood" {
		if err := flood(*pid, *conns, *duration, *socket); err != nil {
			fmt.Fprintln(os.Stderr, "driver:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*mode, *pid, *rate, *duration, *socket, *kubeconfig, *node, *namespace, *pods); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func run(mode string, pid, rate int, duration time.Duration, socket, kubeconfig, node, ns string, pods int) error {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	var send func(i int) error
	switch mode {
	case "idle":
		send = nil
	case "socket":
		send = func(i int) error {
			r := cnireport.Report{Op: cnireport.OpAdd, Result: cnireport.Failure, Pod: fmt.Sprintf("bench/pod-%d", i), Error: "failed to allocate for range 0: no IP addresses available in range set"}
			if i%2 == 1 {
				r.Result, r.Error = cnireport.Success, ""
			}
			_, err := cnireport.Send(context.Background(), socket, r)
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
			pod := fmt.Sprintf("pod-%d", i%max(pods, 1))
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
	// Each send runs in its own goroutine (at most 64 at once), so a slow answer does not lower the
	// rate: CNI plugins do not wait for each other either.
	var (
		sent     int
		errs     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	sem := make(chan struct{}, 64)
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			el := time.Since(start).Seconds()
			wg.Wait()
			sample()
			anon, file := rollup(pid)
			fmt.Printf("mode=%s sent=%d errors=%d rate=%.1f/s rss_end_kib=%d rss_max_kib=%d hwm_kib=%d anon_kib=%d file_kib=%d\n",
				mode, sent, errs.Load(), float64(sent)/el, lastRSS/1024, maxRSS/1024, hwm(pid)/1024, anon/1024, file/1024)
			if e := firstErr.Load(); e != nil {
				fmt.Fprintln(os.Stderr, "first error:", e)
			}
			return nil
		case <-sampleT.C:
			sample()
		case <-tick:
			// Catch up on ticks the runtime dropped while this loop was not scheduled.
			due := int(time.Since(start).Seconds() * float64(rate))
			for sent < due {
				select {
				case sem <- struct{}{}:
				default:
					errs.Add(1) // 64 sends outstanding: the agent is not keeping up
					sent++
					continue
				}
				i := sent
				sent++
				wg.Go(func() {
					defer func() { <-sem }()
					if err := send(i); err != nil {
						errs.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
				})
			}
		}
	}
}

// flood opens n connections to the report socket, one after the other, sends nothing on them and holds
// them for duration while sampling the agent's RSS; then it sends one report (is the agent still
// answering?) and counts how many of its connections the agent has closed.
func flood(pid, n int, duration time.Duration, socket string) error {
	var maxRSS uint64
	sample := func() {
		if v, err := rss(pid); err == nil {
			maxRSS = max(maxRSS, v)
		}
	}
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	dialErrs := 0
	for i := range n {
		// A full accept queue answers EAGAIN at once: wait for the agent to take the queued ones.
		c, err := net.DialTimeout("unix", socket, 5*time.Second)
		for try := 0; err != nil && errors.Is(err, syscall.EAGAIN) && try < 5000; try++ {
			time.Sleep(time.Millisecond)
			c, err = net.DialTimeout("unix", socket, 5*time.Second)
		}
		if err != nil {
			dialErrs++
			continue
		}
		conns = append(conns, c)
		if i%500 == 0 {
			sample()
		}
	}
	opened := time.Since(start)
	end := time.Now().Add(duration)
	for time.Now().Before(end) {
		sample()
		time.Sleep(250 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	report := "answered"
	if _, err := cnireport.Send(ctx, socket, cnireport.Report{Op: cnireport.OpAdd, Result: cnireport.Success, Pod: "bench/after-flood"}); err != nil {
		report = "failed: " + err.Error()
	}
	sample()
	closed := 0
	one := make([]byte, 1)
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(one); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++
		}
	}
	anon, file := rollup(pid)
	fmt.Printf("mode=flood conns=%d dial_errors=%d opened_in=%s closed_by_agent=%d rss_max_kib=%d hwm_kib=%d anon_kib=%d file_kib=%d report=%q\n",
		len(conns), dialErrs, opened.Round(time.Millisecond), closed, maxRSS/1024, hwm(pid)/1024, anon/1024, file/1024, report)
	return nil
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

// rollup returns the anonymous and the file-backed parts of the resident memory (Rss_Anon and
// Rss_File are not in smaps_rollup; Pss_Anon and Pss_File are, and equal them for a private process).
func rollup(pid int) (anon, file uint64) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "Pss_Anon:":
			anon = v * 1024
		case "Pss_File:":
			file = v * 1024
		}
	}
	return anon, file
}
