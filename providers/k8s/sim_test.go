package k8s

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/benchflow/benchflow/providers"
)

// Pod behaviours the simulated cluster can show.
const (
	podsReady     = "ready"     // Running and Ready
	podsImagePull = "imagepull" // Pending in ImagePullBackOff, with a Failed event
	podsCrashLoop = "crashloop" // Running, container in CrashLoopBackOff after exit 1
	podsPending   = "pending"   // never scheduled, with a FailedScheduling event
)

// sim plays the controllers a fake clientset lacks, as documented for
// Kubernetes: the API server allocates node ports on Service creation; the
// Deployment controller creates pods from the template and reports
// status.availableReplicas; the kubelet reports pod phase, the Ready
// condition and container states; the EndpointSlice controller lists
// Ready pods (kubernetes.io/service-name label); an ingress controller
// publishes its address in the Ingress status.
type sim struct {
	cs        *fake.Clientset
	ingressIP string

	mu     sync.Mutex
	mode   string
	seeded map[string]bool
	// gone holds the Deployments (namespace/name) deleted since they were
	// last created: like the real ReplicaSet controller, the simulation
	// never starts pods for them, however stale its last list is.
	gone map[string]bool
}

// newSim returns a fake clientset with a Ready node and starts the
// simulated controllers until the test ends.
func newSim(t *testing.T, mode string, objs ...runtime.Object) *sim {
	t.Helper()
	return newSimWith(t, mode, nil, objs...)
}

// newSimWith is newSim with a function that configures the simulation
// (ingress address, extra reactors) before its controllers start.
func newSimWith(t *testing.T, mode string, configure func(*sim), objs ...runtime.Object) *sim {
	t.Helper()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "v1.31.2"},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: "node-1"},
				{Type: corev1.NodeInternalIP, Address: "10.1.2.3"},
			},
		},
	}
	s := &sim{cs: fake.NewClientset(append([]runtime.Object{node}, objs...)...), mode: mode, seeded: map[string]bool{}, gone: map[string]bool{}}
	// These reactors run under the fake clientset's lock; they only take
	// s.mu, and the simulation never calls the clientset while holding
	// s.mu (it adds pods through the tracker), so they cannot deadlock.
	for verb, deleted := range map[string]bool{"create": false, "delete": true} {
		s.cs.PrependReactor(verb, "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			name := ""
			switch a := a.(type) {
			case k8stesting.CreateAction:
				if d, ok := a.GetObject().(*appsv1.Deployment); ok {
					name = d.Name
				}
			case k8stesting.DeleteAction:
				name = a.GetName()
			}
			s.mu.Lock()
			s.gone[a.GetNamespace()+"/"+name] = deleted
			s.mu.Unlock()
			return false, nil, nil
		})
	}
	s.cs.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		svc := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		if svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
			for i := range svc.Spec.Ports {
				if svc.Spec.Ports[i].NodePort == 0 {
					svc.Spec.Ports[i].NodePort = int32(30080 + i)
				}
			}
		}
		return false, nil, nil
	})
	if configure != nil {
		configure(s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			s.step(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

func (s *sim) setMode(m string) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

func (s *sim) step(ctx context.Context) {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	managed := metav1.ListOptions{LabelSelector: providers.LabelManaged + "=true"}
	deps, err := s.cs.AppsV1().Deployments("").List(ctx, managed)
	if err != nil {
		return
	}
	for i := range deps.Items {
		s.deployment(ctx, &deps.Items[i], mode)
	}
	svcs, err := s.cs.CoreV1().Services("").List(ctx, managed)
	if err != nil {
		return
	}
	for i := range svcs.Items {
		s.endpoints(ctx, &svcs.Items[i])
	}
	if s.ingressIP != "" {
		ings, _ := s.cs.NetworkingV1().Ingresses("").List(ctx, managed)
		for _, ing := range ings.Items {
			if len(ing.Status.LoadBalancer.Ingress) == 0 {
				ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: s.ingressIP}}
				s.cs.NetworkingV1().Ingresses(ing.Namespace).UpdateStatus(ctx, &ing, metav1.UpdateOptions{})
			}
		}
	}
}

func (s *sim) deployment(ctx context.Context, d *appsv1.Deployment, mode string) {
	if d.Spec.Selector == nil || d.Spec.Replicas == nil || len(d.Spec.Template.Spec.Containers) == 0 {
		return // not a Deployment the provider made
	}
	key := d.Namespace + "/" + d.Name + "/" + d.Labels[providers.LabelTrial]
	sel := selectorString(d.Spec.Selector.MatchLabels)
	pods := s.cs.CoreV1().Pods(d.Namespace)
	s.mu.Lock()
	if !s.seeded[key] && !s.gone[d.Namespace+"/"+d.Name] {
		s.seeded[key] = true
		for i := 0; i < int(*d.Spec.Replicas); i++ {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s-%d", d.Name, i), Namespace: d.Namespace,
					Labels: d.Spec.Template.Labels,
				},
				Spec: *d.Spec.Template.Spec.DeepCopy(),
			}
			p.Spec.NodeName = "node-1"
			if err := s.cs.Tracker().Add(p); err != nil {
				s.mu.Unlock()
				return
			}
		}
	}
	s.mu.Unlock()
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	ready := int32(0)
	for i := range list.Items {
		p := &list.Items[i]
		want := podStatus(p, mode)
		if podReady(p) != podReady(&corev1.Pod{Status: want}) || p.Status.Phase != want.Phase || !sameWaiting(p.Status, want) {
			s.event(ctx, p, mode) // before the status, so whoever sees the status finds it
			p.Status = want
			pods.UpdateStatus(ctx, p, metav1.UpdateOptions{})
		}
		if podReady(&corev1.Pod{Status: want}) {
			ready++
		}
	}
	if d.Status.AvailableReplicas != ready || d.Status.Replicas != int32(len(list.Items)) {
		d.Status.AvailableReplicas, d.Status.ReadyReplicas, d.Status.Replicas = ready, ready, int32(len(list.Items))
		s.cs.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	}
}

func sameWaiting(a, b corev1.PodStatus) bool {
	w := func(s corev1.PodStatus) string {
		if len(s.ContainerStatuses) == 0 || s.ContainerStatuses[0].State.Waiting == nil {
			return ""
		}
		return s.ContainerStatuses[0].State.Waiting.Reason
	}
	return w(a) == w(b)
}

func podStatus(p *corev1.Pod, mode string) corev1.PodStatus {
	c := p.Spec.Containers[0]
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
		st := corev1.ConditionFalse
		if ok {
			st = corev1.ConditionTrue
		}
		return corev1.PodCondition{Type: t, Status: st, Reason: reason, Message: msg}
	}
	switch mode {
	case podsReady:
		return corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, true, "", ""), cond(corev1.PodReady, true, "", "")},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: c.Name, Image: c.Image, Ready: true,
				ContainerID: "containerd://" + containerID(p.Name),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			}},
		}
	case podsImagePull:
		return corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, true, "", ""), cond(corev1.PodReady, false, "ContainersNotReady", "containers with unready status: ["+c.Name+"]")},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "ImagePullBackOff", Message: fmt.Sprintf("Back-off pulling image %q", c.Image),
				}},
			}},
		}
	case podsCrashLoop:
		return corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, true, "", ""), cond(corev1.PodReady, false, "ContainersNotReady", "containers with unready status: ["+c.Name+"]")},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: c.Name, Image: c.Image, RestartCount: 3,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
					Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container=" + c.Name,
				}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}},
			}},
		}
	default: // podsPending
		return corev1.PodStatus{
			Phase:      corev1.PodPending,
			Conditions: []corev1.PodCondition{cond(corev1.PodScheduled, false, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")},
		}
	}
}

func (s *sim) event(ctx context.Context, p *corev1.Pod, mode string) {
	var reason, msg string
	switch mode {
	case podsImagePull:
		reason, msg = "Failed", fmt.Sprintf("Failed to pull image %q: not found", p.Spec.Containers[0].Image)
	case podsCrashLoop:
		reason, msg = "BackOff", "Back-off restarting failed container "+p.Spec.Containers[0].Name
	case podsPending:
		reason, msg = "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu."
	default:
		return
	}
	s.cs.CoreV1().Events(p.Namespace).Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: p.Name + "." + reason, Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: p.Name, Namespace: p.Namespace},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg, Count: 1,
		LastTimestamp: metav1.Now(),
	}, metav1.CreateOptions{})
}

func (s *sim) endpoints(ctx context.Context, svc *corev1.Service) {
	if len(svc.Spec.Selector) == 0 {
		return
	}
	pods, err := s.cs.CoreV1().Pods(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: selectorString(svc.Spec.Selector)})
	if err != nil {
		return
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc.Name + "-sim", Namespace: svc.Namespace, Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i, p := range pods.Items {
		ready := podReady(&p)
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.244.0.%d", i+10)},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		})
	}
	slices := s.cs.DiscoveryV1().EndpointSlices(svc.Namespace)
	if _, err := slices.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		slices.Create(ctx, es, metav1.CreateOptions{})
	}
}

// containerID is the (fake, 64 hex digits) id the kubelet reports for the
// container of a pod.
func containerID(pod string) string {
	return fmt.Sprintf("%064x", hash32(pod))
}
