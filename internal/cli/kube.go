package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vitalsproject/vitals/config"
	"github.com/vitalsproject/vitals/internal/cli/clirun"
)

// kubeFlags are the flags of every command that reads a kubeconfig: --kubeconfig and --context, as
// kubectl's.
type kubeFlags struct {
	kubeconfig string
	context    string
}

// addKubeFlags adds --kubeconfig (of what, such as "the cluster holding the VitalsClusters") and
// --context, with their completions.
func addKubeFlags(cmd *cobra.Command, k *kubeFlags, what, def string) {
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig of "+what+" (default: "+def+")")
	clirun.CompleteFiles(cmd, "kubeconfig")
	clirun.AddContextFlag(cmd, &k.context, &k.kubeconfig)
}

// restConfig finds the Kubernetes configuration of the cluster a command talks to: an explicit
// kubeconfig or context (kubectl's rules), Kuryr's api_root with a token file, in-cluster, then
// KUBECONFIG or ~/.kube/config.
func restConfig(k kubeFlags, apiRoot, tokenFile, caFile string) (*rest.Config, error) {
	switch {
	case k.kubeconfig != "" || k.context != "":
		return clirun.LoadKubeconfig(k.kubeconfig, k.context)
	case apiRoot != "":
		c := &rest.Config{Host: apiRoot, BearerTokenFile: tokenFile}
		c.TLSClientConfig.CAFile = caFile
		if err := clirun.CheckRESTFiles(c); err != nil {
			return nil, &config.Error{Field: "[kubernetes]", Msg: err.Error(), Err: err}
		}
		return c, nil
	}
	if c, err := rest.InClusterConfig(); err == nil {
		return c, nil
	}
	c, err := clirun.Kubeconfig(clientcmd.NewDefaultClientConfigLoadingRules())
	if err != nil {
		return nil, &config.Error{Field: "--kubeconfig", Msg: "no Kubernetes configuration: not in a cluster, and no --kubeconfig, [kubernetes] kubeconfig or KUBECONFIG: " + strings.TrimSpace(err.Error()), Err: err}
	}
	return c, nil
}

// addCloudFlag adds --os-cloud, the cloud of clouds.yaml to read OpenStack credentials from (as the
// openstack client's flag), with --cloud as a hidden alias, and their completions.
func addCloudFlag(cmd *cobra.Command, cloud *string, usage string) {
	fl := cmd.Flags()
	fl.StringVar(cloud, "os-cloud", "", usage)
	fl.StringVar(cloud, "cloud", "", "alias of --os-cloud")
	clirun.Must(cmd, "cloud", fl.MarkHidden("cloud"))
	completeClouds(cmd, "os-cloud", "cloud")
}
