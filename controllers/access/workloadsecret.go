package access

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vitalsproject/vitals/api/v1alpha1"
	"github.com/vitalsproject/vitals/openstack"
)

// Keys of a consumer Secret, cloud-provider-openstack's.
const (
	// KeyCloudConf holds a cloud.conf ([Global] auth-url and credentials).
	KeyCloudConf = "cloud.conf"
	// KeyCloudsYAML holds a clouds.yaml (alone, or the clouds-file of a cloud.conf's use-clouds = true).
	KeyCloudsYAML = "clouds.yaml"
)

// secretKey is the key of sec that ref reads: ref.Key, else cloud.conf, else clouds.yaml ("" when sec has none).
func secretKey(sec *corev1.Secret, ref v1alpha1.WorkloadCredentialsSecret) string {
	if ref.Key != "" {
		if _, ok := sec.Data[ref.Key]; ok {
			return ref.Key
		}
		return ""
	}
	for _, k := range []string{KeyCloudConf, KeyCloudsYAML} {
		if _, ok := sec.Data[k]; ok {
			return k
		}
	}
	return ""
}

// secretAuth reads the credentials of a consumer Secret's key: a cloud.conf (by its name or its content's form:
// whatever the key, data that parses as a cloud.conf is one), following its use-clouds = true to the Secret's
// clouds.yaml; else a clouds.yaml. Every value is bounded (openstack.MaxCloudConfSize) and the errors never
// quote it.
func secretAuth(sec *corev1.Secret, key string, ref v1alpha1.WorkloadCredentialsSecret, source string) (openstack.Auth, error) {
	data := sec.Data[key]
	if key != KeyCloudsYAML {
		cc, err := openstack.ParseSecretCloudConf(data, source)
		if err != nil {
			return openstack.Auth{}, err
		}
		if !cc.UseClouds {
			return cc.Auth, nil
		}
		yml, ok := sec.Data[KeyCloudsYAML]
		if !ok {
			return openstack.Auth{}, fmt.Errorf("%s: use-clouds = true, and the Secret has no key %s (its clouds-file is a file of the consumer's pod, which the operator does not read)", source, KeyCloudsYAML)
		}
		cloud := ref.Cloud
		if cloud == "" {
			cloud = cc.Cloud
		}
		return openstack.AuthFromWorkloadCloudsYAML(yml, cloud, fmt.Sprintf("workload secret %s/%s key %s", sec.Namespace, sec.Name, KeyCloudsYAML))
	}
	cloud := ref.Cloud
	if cloud == "" {
		cloud = openstack.DefaultCloudsYAMLCloud
	}
	return openstack.AuthFromWorkloadCloudsYAML(data, cloud, source)
}
