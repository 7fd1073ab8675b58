package k8s

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/benchflow/benchflow/providers"
)

// kubeletForAgents plays the kubelet for the bare agent pods (the
// simulation's own loop only runs Deployments' pods): it reports each new
// one as mode says, until the test ends.
func kubeletForAgents(t *testing.T, s *sim, mode string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pods, err := s.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: LabelAgents})
			if err == nil {
				for i := range pods.Items {
					p := &pods.Items[i]
					if p.Status.Phase == "" {
						p.Status = podStatus(p, mode)
						_, _ = s.cs.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
					}
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

func agentRequest(t *testing.T) *providers.AgentRequest {
	return &providers.AgentRequest{RunID: "20261201T120000Z-ab12", TrialID: "c01-r1", Step: "wrk", Count: 2,
		Image: "benchflow/agent:local", Idle: "60s", Env: map[string]string{"BENCHFLOW_AGENT_CLOCK_SHIFT": "2=1s"}, LogDir: t.TempDir(),
		Token: "s3cret-token-0123456789", Targets: []string{"http://web.benchflow-x.svc:8080/", "http://web.benchflow-x.svc:8080/b"}}
}

// TestLaunchAgentsPods: agents are bare pods labelled like services (so
// teardown and gc find them), running benchflow agent on the agent port,
// reached through a port-forward each, and teardown leaves nothing.
func TestLaunchAgentsPods(t *testing.T) {
	s := newSim(t, podsReady)
	kubeletForAgents(t, s, podsReady)
	p, fw := testProvider(t, s.cs, Config{})
	req := agentRequest(t)
	g, err := p.LaunchAgents(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.URLs(); len(got) != 2 || got[0] != "http://127.0.0.1:"+strconv.Itoa(40000+AgentPort) {
		t.Errorf("URLs %v, want two through the port-forward", got)
	}
	pods, err := s.cs.CoreV1().Pods(runNamespace(req.RunID)).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 2 {
		t.Fatalf("pods %v, %v; want 2", pods, err)
	}
	for i, pod := range pods.Items {
		want := providers.AgentName("wrk", i)
		l := pod.Labels
		if l[providers.LabelManaged] != "true" || l[providers.LabelRun] != req.RunID || l[providers.LabelTrial] != req.TrialID ||
			l[providers.LabelService] != want || l[providers.LabelPID] != strconv.Itoa(os.Getpid()) || l[LabelAgents] != "wrk" {
			t.Errorf("pod %s labels %v", pod.Name, l)
		}
		c := pod.Spec.Containers[0]
		cmd := strings.Join(c.Command, " ")
		if pod.Spec.RestartPolicy != corev1.RestartPolicyNever || c.Image != req.Image ||
			cmd != "/benchflow agent --listen 0.0.0.0:7700 --index "+strconv.Itoa(i)+" --idle 60s" ||
			len(c.Env) != 3 || c.Env[0].Value != "2=1s" || pod.Spec.ActiveDeadlineSeconds == nil {
			t.Errorf("pod %s: restart %s, image %s, command %q, env %v", pod.Name, pod.Spec.RestartPolicy, c.Image, cmd, c.Env)
		}
		// The token and targets come from the Secret: the pod's
		// specification holds neither, and its probe sends no request
		// (which the agent would refuse).
		for i, want := range []struct{ name, key string }{{providers.AgentTokenEnv, "token"}, {providers.AgentTargetsEnv, "targets"}} {
			e := c.Env[1+i]
			if e.Name != want.name || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
				e.ValueFrom.SecretKeyRef.Name != agentSecretName(req) || e.ValueFrom.SecretKeyRef.Key != want.key {
				t.Errorf("pod %s: env %+v, want %s from secret %s key %s", pod.Name, e, want.name, agentSecretName(req), want.key)
			}
		}
		spec, _ := json.Marshal(pod)
		if strings.Contains(string(spec), "s3cret") || strings.Contains(string(spec), "web.benchflow-x") {
			t.Errorf("pod %s: its specification holds the token or the targets: %s", pod.Name, spec)
		}
		if pr := c.ReadinessProbe; pr == nil || pr.TCPSocket == nil || pr.HTTPGet != nil {
			t.Errorf("pod %s: readiness probe %+v, want a TCP probe", pod.Name, pr)
		}
	}
	sec, err := s.cs.CoreV1().Secrets(runNamespace(req.RunID)).Get(context.Background(), agentSecretName(req), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the agents' secret: %v", err)
	}
	if string(sec.Data["token"]) != req.Token || string(sec.Data["targets"]) != "http://web.benchflow-x.svc:8080/\nhttp://web.benchflow-x.svc:8080/b" ||
		sec.Labels[providers.LabelManaged] != "true" || sec.Labels[providers.LabelRun] != req.RunID || sec.Labels[providers.LabelPID] != strconv.Itoa(os.Getpid()) {
		t.Errorf("secret: data %q, labels %v", sec.Data, sec.Labels)
	}
	if err := g.Teardown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !fw.isClosed() {
		t.Error("the port-forward stayed open")
	}
	assertNoLeftovers(t, s.cs)
}

// TestLaunchAgentsImageMissing: an agent image the node cannot pull fails
// the launch, saying so, and leaves nothing.
func TestLaunchAgentsImageMissing(t *testing.T) {
	s := newSim(t, podsImagePull)
	kubeletForAgents(t, s, podsImagePull)
	p, _ := testProvider(t, s.cs, Config{})
	_, err := p.LaunchAgents(context.Background(), agentRequest(t))
	if err == nil || !strings.Contains(err.Error(), "ImagePullBackOff") {
		t.Fatalf("LaunchAgents = %v, want ImagePullBackOff", err)
	}
	assertNoLeftovers(t, s.cs)
}

// TestGCRemovesAgentPods: the pods and Secrets of agents whose benchflow
// is gone are leftovers like a service's; those of a live one are kept.
func TestGCRemovesAgentPods(t *testing.T) {
	s := newSim(t, podsReady)
	cfg, err := Config{}.validate()
	if err != nil {
		t.Fatal(err)
	}
	req := agentRequest(t)
	live := cfg.agentPod(req, 0, "benchflow-x")
	dead := cfg.agentPod(req, 1, "benchflow-x")
	dead.Labels[providers.LabelPID] = "999999999"
	dead.Labels[providers.LabelStart] = "1"
	for _, pod := range []*corev1.Pod{live, dead} {
		if _, err := s.cs.CoreV1().Pods("benchflow-x").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The agents' Secrets: a dead benchflow's goes, a live one's stays.
	liveSecret := cfg.agentSecret(req, "benchflow-x")
	deadSecret := cfg.agentSecret(req, "benchflow-x")
	deadSecret.Name += "-dead"
	deadSecret.Labels[providers.LabelPID] = "999999999"
	deadSecret.Labels[providers.LabelStart] = "1"
	for _, sec := range []*corev1.Secret{liveSecret, deadSecret} {
		if _, err := s.cs.CoreV1().Secrets("benchflow-x").Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := gc(context.Background(), clientFor(s.cs), &providers.GCRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || !strings.Contains(removed[0], dead.Name) || removed[1] != "k8s secret benchflow-x/"+deadSecret.Name {
		t.Errorf("gc removed %v, want only pod %s and secret %s", removed, dead.Name, deadSecret.Name)
	}
	if _, err := s.cs.CoreV1().Secrets("benchflow-x").Get(context.Background(), liveSecret.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the live run's secret: %v", err)
	}
}
