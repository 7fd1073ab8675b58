package k8s

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"

	"github.com/benchflow/benchflow/providers"
)

// AgentPort is the port agents listen on inside their pods.
const AgentPort = 7700

// LabelAgents marks the pods of a step's agents (the step's name).
const LabelAgents = "dev.benchflow.agents"

var _ providers.AgentLauncher = (*Provider)(nil)

// LaunchAgents runs req.Count agents as bare pods (restartPolicy Never) in
// the run's namespace, labelled like services (managed, run, trial,
// service = the agent's name, owner) so teardown and `benchflow gc` find
// them the same way, waits for them to be Ready and opens a port-forward
// to each. The image must hold benchflow at /benchflow (make images
// builds benchflow/agent:local; localcluster/up.sh imports it).
func (p *Provider) LaunchAgents(ctx context.Context, req *providers.AgentRequest) (providers.AgentGroup, error) {
	cs, err := p.clientset()
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	g := &agentPods{p: p, cs: cs, logf: logf, logDir: req.LogDir, step: req.Step}
	g.ns = p.cfg.Namespace
	if g.ns == "" {
		g.ns = runNamespace(req.RunID)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: g.ns, Labels: map[string]string{
			providers.LabelManaged: "true", providers.LabelRun: labelValue(req.RunID)}}}
		g.nsHeld = true
		if err := p.acquireNamespace(ctx, cs, ns); err != nil {
			return nil, err
		}
	}
	g.selector = map[string]string{
		providers.LabelRun: labelValue(req.RunID), providers.LabelTrial: labelValue(req.TrialID), LabelAgents: labelValue(req.Step),
	}
	fail := func(err error) (providers.AgentGroup, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if terr := g.Teardown(cctx); terr != nil {
			err = errors.Join(err, fmt.Errorf("cleaning up: %w", terr))
		}
		return nil, err
	}
	// The token and targets in a Secret the pods read into their
	// environment: nothing secret in the pods' specification.
	secret := p.cfg.agentSecret(req, g.ns)
	logf("k8s: creating secret %s/%s", g.ns, secret.Name)
	if _, err := cs.Secrets(g.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fail(fmt.Errorf("creating the agents' secret %q: %w", secret.Name, err))
	}
	g.secret = secret.Name
	for i := range req.Count {
		pod := p.cfg.agentPod(req, i, g.ns)
		logf("k8s: creating pod %s/%s", g.ns, pod.Name)
		if _, err := cs.Pods(g.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fail(fmt.Errorf("creating agent pod %q: %w", pod.Name, err))
		}
		g.pods = append(g.pods, pod.Name)
	}
	if err := g.waitReady(ctx); err != nil {
		return fail(err)
	}
	fw := p.forward
	if fw == nil {
		fw = p.portForward
	}
	for i, name := range g.pods {
		// client-go's forwarder logs through the klog logger of its
		// context: into the trial's logs, not benchflow's output.
		flog := newForwardLog(g.logDir, providers.AgentName(req.Step, i))
		g.flogs = append(g.flogs, flog)
		f, err := fw(klog.NewContext(ctx, flog.logger()), g.ns, name, []string{"0:" + strconv.Itoa(AgentPort)})
		if err != nil {
			return fail(fmt.Errorf("port-forwarding to agent pod %q: %w", name, err))
		}
		g.fwds = append(g.fwds, f)
		g.urls = append(g.urls, fmt.Sprintf("http://127.0.0.1:%d", f.Ports()[AgentPort]))
		logf("k8s: agent %s/%s at 127.0.0.1:%d", g.ns, name, f.Ports()[AgentPort])
	}
	return g, nil
}

// The keys of the agents' Secret.
const (
	secretKeyToken   = "token"
	secretKeyTargets = "targets"
)

// agentSecretName is the name of a launch's Secret.
func agentSecretName(req *providers.AgentRequest) string {
	return objectName("agent-" + req.Step + "-" + req.TrialID)
}

// agentLabels are the labels of an agent's objects (service: its name,
// or the step's agents for the Secret they share).
func agentLabels(req *providers.AgentRequest, service string) map[string]string {
	labels := map[string]string{
		providers.LabelManaged: "true",
		providers.LabelRun:     labelValue(req.RunID),
		providers.LabelTrial:   labelValue(req.TrialID),
		providers.LabelService: labelValue(service),
		LabelAgents:            labelValue(req.Step),
	}
	for k, v := range providers.SelfOwner().Labels() {
		labels[k] = v
	}
	return labels
}

// agentSecret holds the launch's token and allowed targets, labelled like
// the pods (teardown and gc find it the same way).
func (s *settings) agentSecret(req *providers.AgentRequest, ns string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: agentSecretName(req), Namespace: ns, Labels: agentLabels(req, "agent-"+req.Step),
			Annotations: map[string]string{providers.LabelRun: req.RunID, providers.LabelTrial: req.TrialID},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{secretKeyToken: []byte(req.Token), secretKeyTargets: []byte(providers.AgentTargets(req.Targets))},
	}
}

// agentPod is the pod of agent index.
func (s *settings) agentPod(req *providers.AgentRequest, index int, ns string) *corev1.Pod {
	agentName := providers.AgentName(req.Step, index)
	labels := agentLabels(req, agentName)
	args := []string{"/benchflow", "agent", "--listen", "0.0.0.0:" + strconv.Itoa(AgentPort), "--index", strconv.Itoa(index)}
	if req.Idle != "" {
		args = append(args, "--idle", req.Idle)
	}
	var env []corev1.EnvVar
	keys := make([]string, 0, len(req.Env))
	for k := range req.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: req.Env[k]})
	}
	secret := corev1.LocalObjectReference{Name: agentSecretName(req)}
	for _, e := range []struct{ name, key string }{{providers.AgentTokenEnv, secretKeyToken}, {providers.AgentTargetsEnv, secretKeyTargets}} {
		env = append(env, corev1.EnvVar{Name: e.name, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: secret, Key: e.key}}})
	}
	grace := int64(gracePeriod)
	// A bound on the pod's life should everything else fail: agents exit
	// on their own when their controller goes away.
	deadline := int64(6 * 3600)
	pull := s.pullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: objectName(agentName + "-" + req.TrialID), Namespace: ns, Labels: labels,
			Annotations: map[string]string{providers.LabelRun: req.RunID, providers.LabelTrial: req.TrialID, providers.LabelService: agentName},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &deadline,
			NodeSelector:                  copyMap(s.NodeSelector),
			Containers: []corev1.Container{{
				Name: "agent", Image: req.Image, ImagePullPolicy: pull, Command: args, Env: env,
				Ports: []corev1.ContainerPort{{Name: "agent", ContainerPort: AgentPort, Protocol: corev1.ProtocolTCP}},
				// A TCP probe: every HTTP request without the token
				// is refused, and the kubelet must not hold it.
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(AgentPort)}},
					PeriodSeconds: 1,
				},
			}},
		},
	}
}

// agentPods is a launched set of agent pods.
type agentPods struct {
	p        *Provider
	cs       *Client
	logf     func(string, ...any)
	logDir   string
	step     string
	ns       string
	nsHeld   bool
	selector map[string]string
	secret   string // the token's Secret, once created
	pods     []string
	fwds     []forwarder
	flogs    []*forwardLog
	urls     []string
	done     bool
}

func (g *agentPods) URLs() []string { return g.urls }

// waitReady waits until every agent pod is Ready, failing early on a pod
// that cannot start (image missing, crashed).
func (g *agentPods) waitReady(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, g.p.cfg.readyTimeout)
	defer cancel()
	for {
		ready := 0
		for _, name := range g.pods {
			pod, err := g.cs.Pods(g.ns).Get(wctx, name, metav1.GetOptions{})
			if err != nil {
				if wctx.Err() != nil {
					break
				}
				return fmt.Errorf("reading agent pod %q: %w", name, err)
			}
			if f := fatalState(pod); f != "" {
				return errors.New(f)
			}
			if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
				return fmt.Errorf("agent pod %s ended (%s) before it was ready%s", name, pod.Status.Phase, g.podLogTail(wctx, name))
			}
			if podReady(pod) {
				ready++
			}
		}
		if ready == len(g.pods) {
			return nil
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("agent pods not ready after %s (%d of %d ready)", g.p.cfg.readyTimeout, ready, len(g.pods))
		case <-time.After(g.p.pollInterval / 4):
		}
	}
}

func (g *agentPods) podLogTail(ctx context.Context, pod string) string {
	tail := int64(logLines)
	raw, err := g.cs.PodLogs(g.ns, pod, &corev1.PodLogOptions{TailLines: &tail}).DoRaw(ctx)
	if err != nil || len(raw) == 0 {
		return ""
	}
	return ":\n  | " + strings.ReplaceAll(strings.TrimRight(string(raw), "\n"), "\n", "\n  | ")
}

// Teardown closes the port-forwards, keeps each agent's log in the log
// folder, deletes the pods, waits (bounded) for them to be gone and
// releases the run's namespace.
func (g *agentPods) Teardown(ctx context.Context) error {
	if g.done {
		return nil
	}
	g.done = true
	for _, f := range g.fwds {
		f.Close()
	}
	for _, l := range g.flogs {
		if s := l.close(); s != "" {
			g.logf("k8s: %s", s)
		}
	}
	var errs []error
	pods := g.cs.Pods(g.ns)
	for i, name := range g.pods {
		if g.logDir != "" {
			if raw, err := g.cs.PodLogs(g.ns, name, &corev1.PodLogOptions{}).DoRaw(ctx); err == nil {
				path := filepath.Join(g.logDir, providers.AgentName(g.step, i)+".log")
				if err := os.WriteFile(path, raw, 0o644); err != nil {
					errs = append(errs, fmt.Errorf("keeping the log of agent pod %q: %w", name, err))
				}
			}
		}
		g.logf("k8s: deleting pod %s/%s", g.ns, name)
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting agent pod %q: %w", name, err))
		}
	}
	if g.secret != "" {
		g.logf("k8s: deleting secret %s/%s", g.ns, g.secret)
		if err := g.cs.Secrets(g.ns).Delete(ctx, g.secret, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the agents' secret %q: %w", g.secret, err))
		}
	}
	if len(g.pods) > 0 && len(errs) == 0 {
		limit := g.p.podsGone
		if limit == 0 {
			limit = podsGoneTimeout
		}
		wctx, cancel := context.WithTimeout(ctx, limit)
		for {
			list, err := pods.List(wctx, metav1.ListOptions{LabelSelector: selectorString(g.selector)})
			if err == nil && len(list.Items) == 0 {
				break
			}
			select {
			case <-wctx.Done():
				errs = append(errs, fmt.Errorf("agent pods still exist %s after they were deleted (check `kubectl -n %s get pods`)", limit, g.ns))
			case <-time.After(g.p.pollInterval / 4):
				continue
			}
			break
		}
		cancel()
	}
	if g.nsHeld {
		if err := g.p.releaseNamespace(ctx, g.cs, g.ns); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
