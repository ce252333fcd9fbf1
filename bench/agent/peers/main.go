// Command peers makes the peers of bench/agent/peers.sh: in the Kubernetes API, the EndpointSlices of
// the canaries' Service with one ready endpoint per peer on a node of its own (as the EndpointSlice
// controller writes them, at most 100 endpoints per slice), and this node's own canary; on the
// network, a listener per peer address that accepts connections and closes them, as a canary does.
//
//	peers -kubeconfig K -namespace NS -service S -node N -self 198.18.1.2 -peers 100 -create
//	peers -kubeconfig K -namespace NS -service S -delete
//	peers -listen -peers 100      # in the peers' network namespace: 198.19.1.1 ... on port 8091
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/canary"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig")
	ns := flag.String("namespace", "vitals-bench-agent", "namespace of the canaries' Service")
	service := flag.String("service", "vitals-agent-canary", "the canaries' Service")
	node := flag.String("node", "", "this node (its own canary's endpoint)")
	self := flag.String("self", "198.18.1.2", "this node's canary's address")
	peers := flag.Int("peers", 100, "peers, at 198.19.<1+i/250>.<1+i%250>")
	create := flag.Bool("create", false, "create the EndpointSlices")
	del := flag.Bool("delete", false, "delete the EndpointSlices")
	listen := flag.Bool("listen", false, "listen on the peers' addresses until SIGTERM")
	flag.Parse()
	var err error
	switch {
	case *listen:
		err = serve(*peers)
	case *create || *del:
		err = slices(*kubeconfig, *ns, *service, *node, *self, *peers, *create)
	default:
		err = fmt.Errorf("one of -create, -delete, -listen")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func addr(i int) string { return fmt.Sprintf("198.19.%d.%d", 1+i/250, 1+i%250) }

func serve(n int) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var accepted atomic.Int64
	for i := range n {
		ln, err := net.Listen("tcp", fmt.Sprintf("%s:%d", addr(i), canary.DefaultPort))
		if err != nil {
			return err
		}
		go func() {
			<-ctx.Done()
			ln.Close()
		}()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted.Add(1)
				c.Close()
			}
		}()
	}
	fmt.Printf("listening on %d peer addresses\n", n)
	<-ctx.Done()
	fmt.Printf("peers accepted %d connections\n", accepted.Load())
	return nil
}

func slices(kubeconfig, ns, service, node, self string, n int, create bool) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	sel := discoveryv1.LabelServiceName + "=" + service
	if !create {
		return c.DiscoveryV1().EndpointSlices(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: sel})
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	port, name, proto := int32(canary.DefaultPort), "probe", corev1.ProtocolTCP
	yes, no := true, false
	endpoint := func(a, nodeName string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{a}, NodeName: &nodeName,
			Conditions: discoveryv1.EndpointConditions{Ready: &yes, Serving: &yes, Terminating: &no},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "canary-" + nodeName}}
	}
	eps := []discoveryv1.Endpoint{endpoint(self, node)}
	for i := range n {
		eps = append(eps, endpoint(addr(i), fmt.Sprintf("bench-peer-%d", i)))
	}
	for k := 0; k*100 < len(eps); k++ {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", service, k), Namespace: ns,
				Labels: map[string]string{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "bench"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
			Endpoints:   eps[k*100 : min(len(eps), (k+1)*100)],
		}
		if _, err := c.DiscoveryV1().EndpointSlices(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create EndpointSlice %s: %w", s.Name, err)
		}
	}
	return nil
}
