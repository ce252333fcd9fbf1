package main

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// workload is the one API server every VitalsCluster's kubeconfig Secret names as its workload cluster:
// the operator makes one access per cluster to it (its own connection, probe and Node informer), as it
// would to each cluster's own API server, and flight lists its Nodes every pass.
type workload struct {
	kubeconfig []byte // the kubeconfig with everything inline, as a tenant's Secret holds it
	api        *apiserver
}

// setupWorkload creates nodes Ready Nodes in the API server of kubeconfig, laid out as the simulator seeds
// every cluster's nodes (node i: pod CIDR 198.19.i.0/24, InternalIP the i-th node address of
// 10.180.0.0/24, whose route every cluster's router holds), with no providerID: they name no server, so
// flight's server repairs have no server of the cluster to judge and its route repair finds every Node's
// route in place.
func setupWorkload(ctx context.Context, kubeconfig string, nodes int) (*workload, error) {
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load the workload kubeconfig %s: %w", kubeconfig, err)
	}
	if err := clientcmdapi.FlattenConfig(raw); err != nil {
		return nil, fmt.Errorf("inline the workload kubeconfig %s: %w", kubeconfig, err)
	}
	data, err := clientcmd.Write(*raw)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("workload kubeconfig %s: %w", kubeconfig, err)
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)},
			Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("198.19.%d.0/24", i), PodCIDRs: []string{fmt.Sprintf("198.19.%d.0/24", i)}}}
		if err := c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create node %s in the workload cluster: %w", n.Name, err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
			return nil, err
		}
		n.Status = corev1.NodeStatus{
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.180.0.%d", 10+i)}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		if err := c.Status().Update(ctx, n); err != nil {
			return nil, fmt.Errorf("set node %s Ready in the workload cluster: %w", n.Name, err)
		}
	}
	api, err := newAPIServer(cfg)
	if err != nil {
		return nil, err
	}
	return &workload{kubeconfig: data, api: api}, nil
}

// apiserver is a kube-apiserver the bench reads the metrics of, with its own client's credentials.
type apiserver struct {
	hc   *http.Client
	host string
}

func newAPIServer(cfg *rest.Config) (*apiserver, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &apiserver{hc: hc, host: cfg.Host}, nil
}

// scrape reads the API server's /metrics (nil a: nothing).
func (a *apiserver) scrape(ctx context.Context) metrics {
	if a == nil {
		return nil
	}
	m, err := scrape(ctx, a.hc, a.host+"/metrics")
	if err != nil {
		return nil
	}
	return m
}
