package rbac

import (
	"bytes"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// ManifestPath is the manifest's path in the repository.
const ManifestPath = "deploy/manifests/workload-rbac.yaml"

// Manifest is deploy/manifests/workload-rbac.yaml, typed.
type Manifest struct {
	ServiceAccount     *corev1.ServiceAccount
	TokenSecret        *corev1.Secret
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Roles              []rbacv1.Role
	RoleBindings       []rbacv1.RoleBinding
}

// ParseManifest reads the manifest's documents strictly into their types; a kind it does not expect, or a
// second ServiceAccount, Secret, ClusterRole or ClusterRoleBinding, is an error.
func ParseManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
	for i, doc := range bytes.Split(data, []byte("\n---\n")) {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		var into any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ServiceAccount":
			if m.ServiceAccount != nil {
				return nil, fmt.Errorf("document %d: a second ServiceAccount", i+1)
			}
			m.ServiceAccount = &corev1.ServiceAccount{}
			into = m.ServiceAccount
		case "v1 Secret":
			if m.TokenSecret != nil {
				return nil, fmt.Errorf("document %d: a second Secret", i+1)
			}
			m.TokenSecret = &corev1.Secret{}
			into = m.TokenSecret
		case "rbac.authorization.k8s.io/v1 ClusterRole":
			if m.ClusterRole != nil {
				return nil, fmt.Errorf("document %d: a second ClusterRole", i+1)
			}
			m.ClusterRole = &rbacv1.ClusterRole{}
			into = m.ClusterRole
		case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
			if m.ClusterRoleBinding != nil {
				return nil, fmt.Errorf("document %d: a second ClusterRoleBinding", i+1)
			}
			m.ClusterRoleBinding = &rbacv1.ClusterRoleBinding{}
			into = m.ClusterRoleBinding
		case "rbac.authorization.k8s.io/v1 Role":
			m.Roles = append(m.Roles, rbacv1.Role{})
			into = &m.Roles[len(m.Roles)-1]
		case "rbac.authorization.k8s.io/v1 RoleBinding":
			m.RoleBindings = append(m.RoleBindings, rbacv1.RoleBinding{})
			into = &m.RoleBindings[len(m.RoleBindings)-1]
		default:
			return nil, fmt.Errorf("document %d: unexpected %s %s", i+1, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, into); err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, head.Kind, err)
		}
	}
	if m.ServiceAccount == nil || m.ClusterRole == nil || m.ClusterRoleBinding == nil {
		return nil, fmt.Errorf("want a ServiceAccount, a ClusterRole and a ClusterRoleBinding")
	}
	return m, nil
}

// Accesses are what the manifest's roles grant: the ClusterRole's in every namespace, each Role's in its own;
// sorted.
func (m *Manifest) Accesses() []Access {
	out := FromRules("", m.ClusterRole.Rules)
	for _, r := range m.Roles {
		out = append(out, FromRules(r.Namespace, r.Rules)...)
	}
	Sort(out)
	return out
}
