package k8s

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errReadyTimeout is the cause of the readiness context when ready_timeout
// passes.
var errReadyTimeout = errors.New("ready_timeout reached")

// fatalReasons are container waiting reasons that do not heal by waiting:
// the rollout fails at once, quoting the pod's state.
var fatalReasons = map[string]bool{
	"ImagePullBackOff":           true,
	"ErrImageNeverPull":          true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CrashLoopBackOff":           true,
}

// logLines is how many of the last log lines a failure quotes.
const logLines = 20

// rollout is what the readiness wait has seen so far.
type rollout struct {
	want        int32
	available   int32
	readyPods   int
	endpoints   int
	needIngress bool
	ingressAddr string
	fatal       string // "" unless a pod is in a state waiting cannot fix
}

func (r *rollout) done() bool {
	return r.available >= r.want && r.readyPods >= int(r.want) && r.endpoints >= int(r.want) &&
		(!r.needIngress || r.ingressAddr != "")
}

func (r *rollout) String() string {
	s := fmt.Sprintf("available replicas %d/%d, ready pods %d/%d, ready endpoints %d/%d",
		r.available, r.want, r.readyPods, r.want, r.endpoints, r.want)
	if r.needIngress {
		if r.ingressAddr == "" {
			s += ", ingress address pending"
		} else {
			s += ", ingress at " + r.ingressAddr
		}
	}
	return s
}

// waitReady polls until the Deployment has its replicas available, as many
// pods Ready, as many ready endpoints behind the Service and, for an
// ingress without ingress_address, a published address. It fails at once
// when a pod is in a fatal state and after ready_timeout otherwise; both
// errors quote the pods' container statuses, events and last log lines.
func (d *Deployment) waitReady(ctx context.Context) error {
	timeout := d.p.cfg.readyTimeout
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, errReadyTimeout)
	defer cancel()
	var last *rollout
	var lastErr error
	for {
		r, err := d.observe(wctx)
		if err == nil {
			last = r
			if r.fatal != "" {
				return fmt.Errorf("rollout failed: %s%s", r.fatal, d.diagnose(ctx))
			}
			if r.done() {
				d.ingress = r.ingressAddr
				d.logf("k8s: %s/%s ready: %s", d.objs.ns, d.objs.name, r)
				return nil
			}
		} else if wctx.Err() == nil {
			lastErr = err
		}
		select {
		case <-wctx.Done():
			progress := "nothing observed"
			if last != nil {
				progress = last.String()
			}
			if lastErr != nil {
				progress += "; last API error: " + lastErr.Error()
			}
			if errors.Is(context.Cause(wctx), errReadyTimeout) {
				dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
				defer dcancel()
				return fmt.Errorf("waiting for the rollout: timed out after %s (%s)%s", timeout, progress, d.diagnose(dctx))
			}
			return fmt.Errorf("waiting for the rollout (%s): %w", progress, ctx.Err())
		case <-time.After(d.p.pollInterval):
		}
	}
}

// observe reads the Deployment, its pods, the Service's EndpointSlices and
// the Ingress once.
func (d *Deployment) observe(ctx context.Context) (*rollout, error) {
	o := d.objs
	r := &rollout{want: o.replicas, needIngress: o.Ingress != nil && d.p.cfg.IngressAddress == ""}
	dep, err := d.cs.Deployments(o.ns).Get(ctx, o.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Deployment %q: %w", o.name, err)
	}
	r.available = dep.Status.AvailableReplicas

	pods, err := d.pods(ctx)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if podReady(&pods[i]) {
			r.readyPods++
		}
		if r.fatal == "" {
			r.fatal = fatalState(&pods[i])
		}
	}

	slices, err := d.cs.EndpointSlices(o.ns).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=" + o.Service.Name,
	})
	if err != nil {
		return nil, fmt.Errorf("listing EndpointSlices of %q: %w", o.Service.Name, err)
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				r.endpoints++
			}
		}
	}

	if r.needIngress {
		ing, err := d.cs.Ingresses(o.ns).Get(ctx, o.Ingress.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading Ingress %q: %w", o.Ingress.Name, err)
		}
		for _, lb := range ing.Status.LoadBalancer.Ingress {
			if lb.IP != "" {
				r.ingressAddr = lb.IP
				break
			}
			if lb.Hostname != "" {
				r.ingressAddr = lb.Hostname
				break
			}
		}
	}
	return r, nil
}

// pods lists the trial's pods of this service, sorted by name.
func (d *Deployment) pods(ctx context.Context) ([]corev1.Pod, error) {
	list, err := d.cs.Pods(d.objs.ns).List(ctx, metav1.ListOptions{LabelSelector: selectorString(d.objs.selector)})
	if err != nil {
		return nil, fmt.Errorf("listing pods of %q: %w", d.objs.name, err)
	}
	items := list.Items
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return items, nil
}

// Alive reports an error when a pod of the service is in a state waiting
// cannot fix (CrashLoopBackOff, ImagePullBackOff, …), quoting its status,
// events and last log lines.
//
// The engine asks before every health probe; the pods are read at most once
// per poll interval (one second) and the last answer is repeated between.
func (d *Deployment) Alive(ctx context.Context) error {
	d.aliveMu.Lock()
	defer d.aliveMu.Unlock()
	if !d.aliveAt.IsZero() && time.Since(d.aliveAt) < d.p.pollInterval {
		return d.aliveErr
	}
	d.aliveErr = d.alive(ctx)
	d.aliveAt = time.Now()
	return d.aliveErr
}

func (d *Deployment) alive(ctx context.Context) error {
	pods, err := d.pods(ctx)
	if err != nil {
		return nil // the API not answering once says nothing about the pods
	}
	for i := range pods {
		if f := fatalState(&pods[i]); f != "" {
			return fmt.Errorf("%s%s", f, d.diagnose(ctx))
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fatalState describes the first container of p stuck in a fatal waiting
// reason, or returns "".
func fatalState(p *corev1.Pod) string {
	all := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range all {
		if w := cs.State.Waiting; w != nil && fatalReasons[w.Reason] {
			return fmt.Sprintf("pod %s: container %s is in %s", p.Name, cs.Name, w.Reason)
		}
	}
	return ""
}

// diagnose describes the Deployment's conditions and, for up to three pods
// (not-ready first), their conditions, container statuses, events and last
// log lines. The text starts with a newline, or is empty.
func (d *Deployment) diagnose(ctx context.Context) string {
	var b strings.Builder
	o := d.objs
	if dep, err := d.cs.Deployments(o.ns).Get(ctx, o.name, metav1.GetOptions{}); err == nil {
		for _, c := range dep.Status.Conditions {
			if c.Status != corev1.ConditionTrue || c.Type == "ReplicaFailure" {
				fmt.Fprintf(&b, "\n  deployment %s: %s=%s (%s): %s", o.name, c.Type, c.Status, c.Reason, c.Message)
			}
		}
	}
	pods, err := d.pods(ctx)
	if err != nil {
		fmt.Fprintf(&b, "\n  %v", err)
		return b.String()
	}
	events := d.events(ctx)
	if len(pods) == 0 {
		fmt.Fprintf(&b, "\n  no pod was created")
		// The Deployment and its ReplicaSets say why (quota, admission…).
		for _, e := range events {
			if strings.HasPrefix(e.InvolvedObject.Name, o.name) && e.InvolvedObject.Kind != "Pod" {
				fmt.Fprintf(&b, "\n  %s", eventLine(e))
			}
		}
		return b.String()
	}
	sort.SliceStable(pods, func(i, j int) bool { return !podReady(&pods[i]) && podReady(&pods[j]) })
	if len(pods) > 3 {
		fmt.Fprintf(&b, "\n  (%d pods, showing 3)", len(pods))
		pods = pods[:3]
	}
	for i := range pods {
		p := &pods[i]
		fmt.Fprintf(&b, "\n  pod %s: phase %s", p.Name, p.Status.Phase)
		if p.Spec.NodeName != "" {
			fmt.Fprintf(&b, " on node %s", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
				fmt.Fprintf(&b, "\n    condition %s=%s (%s): %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		all := append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range all {
			fmt.Fprintf(&b, "\n    container %s: %s, restarts %d", cs.Name, stateText(cs.State), cs.RestartCount)
			if cs.LastTerminationState.Terminated != nil {
				fmt.Fprintf(&b, "; previous instance %s", stateText(cs.LastTerminationState))
			}
			if cs.RestartCount > 0 || cs.State.Terminated != nil {
				if lines := d.lastLogs(ctx, p.Name, cs.Name, cs.RestartCount > 0); lines != "" {
					fmt.Fprintf(&b, "\n    last log lines of %s:%s", cs.Name, lines)
				}
			}
		}
		n := 0
		for _, e := range events {
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == p.Name {
				if n == 0 {
					b.WriteString("\n    events:")
				}
				fmt.Fprintf(&b, "\n      %s", eventLine(e))
				n++
			}
		}
	}
	return b.String()
}

// events lists the namespace's events, oldest first, newest 50 kept.
func (d *Deployment) events(ctx context.Context) []corev1.Event {
	list, err := d.cs.Events(d.objs.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	ev := list.Items
	sort.SliceStable(ev, func(i, j int) bool { return eventTime(ev[i]).Before(eventTime(ev[j])) })
	if len(ev) > 50 {
		ev = ev[len(ev)-50:]
	}
	return ev
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

func eventLine(e corev1.Event) string {
	s := fmt.Sprintf("%s %s: %s", e.Type, e.Reason, strings.TrimSpace(e.Message))
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d)", e.Count)
	}
	return s
}

func stateText(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		t := "waiting: " + s.Waiting.Reason
		if s.Waiting.Message != "" {
			t += " (" + s.Waiting.Message + ")"
		}
		return t
	case s.Terminated != nil:
		t := fmt.Sprintf("terminated: %s, exit code %d", s.Terminated.Reason, s.Terminated.ExitCode)
		if s.Terminated.Message != "" {
			t += " (" + strings.TrimSpace(s.Terminated.Message) + ")"
		}
		return t
	case s.Running != nil:
		return "running"
	}
	return "unknown"
}

// lastLogs returns the container's last log lines, indented, from the
// previous instance when it restarted (falling back to the current one).
func (d *Deployment) lastLogs(ctx context.Context, pod, container string, previous bool) string {
	tail := int64(logLines)
	get := func(prev bool) string {
		raw, err := d.cs.PodLogs(d.objs.ns, pod, &corev1.PodLogOptions{
			Container: container, Previous: prev, TailLines: &tail,
		}).DoRaw(ctx)
		if err != nil {
			return ""
		}
		return strings.TrimRight(string(raw), "\n")
	}
	text := ""
	if previous {
		text = get(true)
	}
	if text == "" {
		text = get(false)
	}
	if text == "" {
		return ""
	}
	lines := strings.Split(text, "\n")
	if len(lines) > logLines {
		lines = lines[len(lines)-logLines:]
	}
	return "\n      | " + strings.Join(lines, "\n      | ")
}
