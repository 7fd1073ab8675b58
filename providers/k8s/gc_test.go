package k8s

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchflow/benchflow/providers"
)

// TestGCKeepsLiveOwners: without a run id, gc keeps the namespace and
// objects of a run whose benchflow process still runs (this one) and of a
// run on another host, reporting each, and removes those of a process that
// is gone; naming the live run removes its objects too.
func TestGCKeepsLiveOwners(t *testing.T) {
	ctx := context.Background()
	s := newSim(t, podsReady)
	me := providers.SelfOwner()
	owners := map[string]map[string]string{
		"live":  me.Labels(),
		"other": providers.Owner{Host: "elsewhere", PID: me.PID}.Labels(),
		// the same pid with another start time: the pid was reused
		"dead": providers.Owner{Host: me.Host, PID: me.PID, Start: me.Start + 1, Boot: me.Boot}.Labels(),
	}
	run := func(name string) string { return "20261201T000000Z-" + name }
	for name, owner := range owners {
		l := map[string]string{providers.LabelManaged: "true", providers.LabelRun: labelValue(run(name))}
		for k, v := range owner {
			l[k] = v
		}
		meta := metav1.ObjectMeta{Name: name, Namespace: "shared", Labels: l}
		if _, err := s.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: runNamespace(run(name)), Labels: l}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.cs.AppsV1().Deployments("shared").Create(ctx, &appsv1.Deployment{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var kept []string
	req := &providers.GCRequest{Logf: func(f string, a ...any) { kept = append(kept, fmt.Sprintf(f, a...)) }}
	removed, err := gc(ctx, clientFor(s.cs), req)
	if err != nil {
		t.Fatal(err)
	}
	want := "k8s namespace " + runNamespace(run("dead")) + ",k8s deployment shared/dead"
	if got := strings.Join(removed, ","); got != want {
		t.Errorf("gc removed %s\nwant %s", got, want)
	}
	all := strings.Join(kept, "\n")
	for _, w := range []string{
		"kept k8s namespace " + runNamespace(run("live")) + ": its run " + run("live") + " is still running",
		"kept k8s deployment shared/live: its run",
		"kept k8s namespace " + runNamespace(run("other")) + ": its run " + run("other") + " belongs to pid",
		"name the run (--run " + run("other") + ")",
	} {
		if !strings.Contains(all, w) {
			t.Errorf("kept report lacks %q:\n%s", w, all)
		}
	}
	if l := leftovers(t, s.cs); len(l) != 4 {
		t.Errorf("after gc: %v, want the live and the other host's namespace and deployment", l)
	}
	// Naming the run is the user's decision: it goes even though it is live.
	removed, err = gc(ctx, clientFor(s.cs), &providers.GCRequest{RunID: run("live")})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("gc --run %s removed %v, want its namespace and deployment", run("live"), removed)
	}
}

// TestGCTargets: gc reaches each distinct cluster the pipeline's provider
// blocks name, and the default kubeconfig without any.
func TestGCTargets(t *testing.T) {
	got := gcTargets(&providers.GCRequest{Configs: []any{
		&Config{Kubeconfig: "/a", Namespace: "x"}, &Config{Kubeconfig: "/a", Expose: "ingress"},
		&Config{Kubeconfig: "/a", Context: "c"}, Config{InCluster: true}, "not a config",
	}})
	var s []string
	for _, c := range got {
		s = append(s, c.describe())
	}
	if want := "kubeconfig /a|kubeconfig /a, context c|in-cluster config"; strings.Join(s, "|") != want {
		t.Errorf("targets %q, want %q", strings.Join(s, "|"), want)
	}
	if got := gcTargets(&providers.GCRequest{}); len(got) != 1 || got[0].describe() != "the default kubeconfig" {
		t.Errorf("without configs: %+v", got)
	}
}
