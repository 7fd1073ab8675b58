package k8s

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/benchflow/benchflow/providers"
)

// TestPlatformVersions: a deployment on the simulated cluster reports the
// API server's version and the kubelet of the node its pods run on; what
// the cluster refuses is left out.
func TestPlatformVersions(t *testing.T) {
	s := newSim(t, podsReady)
	s.cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: "v1.31.2+k3s1", Major: "1", Minor: "31"}
	p, _ := testProvider(t, s.cs, Config{Expose: ExposeNodePort})
	d, err := p.Provision(context.Background(), nginxRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Teardown(context.Background())
	vr, ok := d.(providers.VersionReporter)
	if !ok {
		t.Fatalf("%T is not a providers.VersionReporter", d)
	}
	want := map[string]string{"k8s_server": "v1.31.2+k3s1", "kubelet": "v1.31.2"}
	if diff := cmp.Diff(want, vr.PlatformVersions(context.Background())); diff != "" {
		t.Errorf("versions (-want +got):\n%s", diff)
	}

	// A second node with another kubelet running a pod of the service:
	// both are listed.
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.30.6"}}}
	if _, err := s.cs.CoreV1().Nodes().Create(context.Background(), n2, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods, err := d.(*Deployment).pods(context.Background())
	if err != nil || len(pods) == 0 {
		t.Fatalf("pods: %v, %v", pods, err)
	}
	extra := pods[0].DeepCopy()
	extra.Name, extra.ResourceVersion, extra.Spec.NodeName = extra.Name+"-b", "", "node-2"
	if _, err := s.cs.CoreV1().Pods(extra.Namespace).Create(context.Background(), extra, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want["kubelet"] = "v1.30.6, v1.31.2"
	if diff := cmp.Diff(want, vr.PlatformVersions(context.Background())); diff != "" {
		t.Errorf("versions with two nodes (-want +got):\n%s", diff)
	}

	// Nodes forbidden (RBAC of a namespace-only user): the server's
	// version alone.
	s.cs.PrependReactor("get", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden("nodes")
	})
	if diff := cmp.Diff(map[string]string{"k8s_server": "v1.31.2+k3s1"}, vr.PlatformVersions(context.Background())); diff != "" {
		t.Errorf("versions without nodes (-want +got):\n%s", diff)
	}
	// Nothing answers: no versions, no error.
	s.cs.PrependReactor("get", "version", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, forbidden("version")
	})
	if got := vr.PlatformVersions(context.Background()); got != nil {
		t.Errorf("versions = %v, want nil", got)
	}
}

func forbidden(resource string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
}
