package operator

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	kclient "k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/vitalsproject/vitals/remediation"
)

// PauseKey is the key of the pause ConfigMap whose value "true" pauses every controller; the optional
// key "reason" says why, in Events and conditions.
const PauseKey = "paused"

// pauseSwitch is the operator-wide runtime pause: one ConfigMap in the operator's namespace, watched by
// name on every replica. Absent, or paused "false": not paused. Until it has been read, and when the
// value is neither "true" nor "false", it pauses: a switch that cannot be read is not an open one.
type pauseSwitch struct {
	namespace, name string
	factory         informers.SharedInformerFactory
	informer        toolscache.SharedIndexInformer
}

var (
	_ remediation.Switch             = (*pauseSwitch)(nil)
	_ manager.LeaderElectionRunnable = (*pauseSwitch)(nil)
)

func newPauseSwitch(cs kclient.Interface, namespace, name string) *pauseSwitch {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	return &pauseSwitch{namespace: namespace, name: name, factory: f, informer: f.Core().V1().ConfigMaps().Informer()}
}

// NeedLeaderElection: a standby replica knows the switch before it leads.
func (p *pauseSwitch) NeedLeaderElection() bool { return false }

// Start watches the ConfigMap until ctx ends.
func (p *pauseSwitch) Start(ctx context.Context) error {
	p.factory.Start(ctx.Done())
	<-ctx.Done()
	p.factory.Shutdown()
	return nil
}

// Paused reads the switch.
func (p *pauseSwitch) Paused() (bool, string) {
	where := fmt.Sprintf("ConfigMap %s/%s", p.namespace, p.name)
	if !p.informer.HasSynced() {
		return true, "the pause switch (" + where + ") has not been read yet"
	}
	obj, ok, err := p.informer.GetStore().GetByKey(p.namespace + "/" + p.name)
	if err != nil {
		return true, fmt.Sprintf("the pause switch (%s) cannot be read: %v", where, err)
	}
	if !ok {
		return false, ""
	}
	cm, isCM := obj.(*corev1.ConfigMap)
	if !isCM {
		return true, "the pause switch (" + where + ") cannot be read"
	}
	v := cm.Data[PauseKey]
	why := ""
	if r := strings.TrimSpace(cm.Data["reason"]); r != "" {
		why = ": " + r
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, fmt.Sprintf("%s says %s: \"true\"%s", where, PauseKey, why)
	case "false", "":
		return false, ""
	}
	return true, fmt.Sprintf("%s has %s: %q (not \"true\" or \"false\"): treated as paused%s", where, PauseKey, v, why)
}
