package testenv

import (
	"context"
	"fmt"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeUser creates, in the kube-apiserver of admin (a system:masters configuration such as Kube's), a
// user that may do rules in namespace and nothing else: a ServiceAccount bound to a Role of those
// rules, whose token (TokenRequest, one hour) authenticates it. It returns a client configuration that
// authenticates as that user with its bearer token, as an attacker holding those rights would. The
// ServiceAccount, Role and RoleBinding are deleted when t ends.
func KubeUser(t testing.TB, admin *rest.Config, namespace, name string, rules ...rbacv1.PolicyRule) *rest.Config {
	t.Helper()
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatalf("kube user %s: %v", name, err)
	}
	ctx := context.Background()
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kube user %s: create service account: %v", name, err)
	}
	if _, err := cs.RbacV1().Roles(namespace).Create(ctx, &rbacv1.Role{ObjectMeta: meta, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kube user %s: create role: %v", name, err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: namespace}}}
	if _, err := cs.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kube user %s: create role binding: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cs.RbacV1().RoleBindings(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.RbacV1().Roles(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = cs.CoreV1().ServiceAccounts(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	})
	hour := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &hour}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kube user %s: request token: %v", name, err)
	}
	cfg := rest.AnonymousClientConfig(admin)
	cfg.BearerToken = tr.Status.Token
	cfg.UserAgent = fmt.Sprintf("testenv-user-%s", name)
	return cfg
}
