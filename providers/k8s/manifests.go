package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/benchflow/benchflow/providers"
)

// maxConfigMapBytes is the size limit of one ConfigMap (etcd's object limit).
const maxConfigMapBytes = 1 << 20

// filesVolume is the name of the pod volume holding the service's files.
const filesVolume = "benchflow-files"

// gracePeriod is the pods' termination grace period in seconds: short, so a
// trial's teardown does not overlap the next trial for long.
const gracePeriod = 5

// objects is everything one service of one trial needs, in creation order.
type objects struct {
	Namespace  *corev1.Namespace // nil when the namespace is given
	ConfigMap  *corev1.ConfigMap // nil when the service has no files
	Deployment *appsv1.Deployment
	Service    *corev1.Service
	Ingress    *networkingv1.Ingress // nil unless expose = "ingress"

	ns       string
	name     string
	replicas int32
	ports    []portInfo
	selector map[string]string
}

// portInfo is one service port with its Kubernetes name and number.
type portInfo struct {
	Name      string // the pipeline's name
	KubeName  string // a valid IANA service name
	Container int32
	Local     int // the host port the engine picked, 0 if none
}

// list returns the objects in creation order.
func (o *objects) list() []runtime.Object {
	var out []runtime.Object
	if o.Namespace != nil {
		out = append(out, o.Namespace)
	}
	if o.ConfigMap != nil {
		out = append(out, o.ConfigMap)
	}
	out = append(out, o.Deployment, o.Service)
	if o.Ingress != nil {
		out = append(out, o.Ingress)
	}
	return out
}

// addLabels merges m into the labels of every object and of the pod
// template (not into the selector, which must stay as it was).
func (o *objects) addLabels(m map[string]string) {
	for _, obj := range o.list() {
		if a, err := meta.Accessor(obj); err == nil {
			a.SetLabels(mergeMaps(a.GetLabels(), m))
		}
	}
	if o.Deployment != nil {
		t := &o.Deployment.Spec.Template.ObjectMeta
		t.Labels = mergeMaps(t.Labels, m)
	}
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// build turns a provision request into the objects to create. It reads the
// service's files from the host but contacts nothing. Each object has a
// function of its own below, in creation order.
func (s *settings) build(req *providers.ProvisionRequest) (*objects, error) {
	svc := &req.Service
	if svc.Image == "" {
		return nil, fmt.Errorf("service %q has no image: the k8s provider runs container images", svc.Name)
	}
	if len(svc.Ports) == 0 {
		return nil, fmt.Errorf("service %q declares no port: the k8s provider needs one to reach it", svc.Name)
	}
	o := &objects{name: objectName(svc.Name)}
	o.ns = s.Namespace
	if o.ns == "" {
		o.ns = runNamespace(req.RunID)
	}
	id := newIdentity(o.ns, req)
	o.selector = id.selector()
	if s.Namespace == "" {
		o.Namespace = id.namespace()
	}
	var err error
	if o.ports, err = kubePorts(svc); err != nil {
		return nil, err
	}
	files, err := s.files(svc, id.meta(o.name+"-files"))
	if err != nil {
		return nil, err
	}
	o.ConfigMap = files.configMap
	o.replicas = 1
	if svc.Replicas > 0 {
		o.replicas = int32(svc.Replicas)
	} else if s.Replicas > 0 {
		o.replicas = int32(s.Replicas)
	}
	o.Deployment = s.deployment(o, id, s.container(o, svc, files.mounts), files.volumes)
	o.Service = s.service(o, id)
	if s.Expose == ExposeIngress {
		o.Ingress = s.ingress(o, id)
	}
	return o, nil
}

// identity is what every object of one service carries: the benchflow
// labels, with the run, trial and service ids made valid label values,
// and annotations keeping the original spelling of the ids that had to
// change.
type identity struct {
	ns          string
	labels      map[string]string
	annotations map[string]string
}

func newIdentity(ns string, req *providers.ProvisionRequest) identity {
	id := identity{ns: ns, annotations: map[string]string{}}
	ids := map[string]string{
		providers.LabelRun:     req.RunID,
		providers.LabelTrial:   req.TrialID,
		providers.LabelService: req.Service.Name,
	}
	id.labels = map[string]string{providers.LabelManaged: "true"}
	for k, v := range ids {
		id.labels[k] = labelValue(v)
		if id.labels[k] != v {
			id.annotations[k] = v
		}
	}
	return id
}

// meta is the metadata of the object called name.
func (id identity) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: id.ns,
		Labels: copyMap(id.labels), Annotations: copyMap(id.annotations),
	}
}

// selector matches the pods of this service in this trial.
func (id identity) selector() map[string]string {
	return map[string]string{
		providers.LabelRun:     id.labels[providers.LabelRun],
		providers.LabelTrial:   id.labels[providers.LabelTrial],
		providers.LabelService: id.labels[providers.LabelService],
	}
}

// namespace is the run's own namespace, created when the provider block
// names none.
func (id identity) namespace() *corev1.Namespace {
	var ann map[string]string
	if v, ok := id.annotations[providers.LabelRun]; ok {
		ann = map[string]string{providers.LabelRun: v}
	}
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{
			Name: id.ns,
			Labels: map[string]string{
				providers.LabelManaged: "true",
				providers.LabelRun:     id.labels[providers.LabelRun],
			},
			Annotations: ann,
		},
	}
}

// kubePorts names the service's ports as Kubernetes wants them (valid,
// unique IANA names) with their container numbers.
func kubePorts(svc *providers.ServiceSpec) ([]portInfo, error) {
	var out []portInfo
	seen := map[string]bool{}
	for i, p := range svc.Ports {
		n := p.Container
		if n == 0 {
			n = p.Host
		}
		if n < 1 || n > 65535 {
			return nil, fmt.Errorf("service %q: port %q has no container port (set port %q { container = N })", svc.Name, p.Name, p.Name)
		}
		kn := portName(p.Name, i)
		if seen[kn] {
			kn = fmt.Sprintf("p%d", i)
		}
		seen[kn] = true
		out = append(out, portInfo{Name: p.Name, KubeName: kn, Container: int32(n), Local: p.Host})
	}
	return out, nil
}

// serviceFiles is how a service's files reach its container: one
// ConfigMap, mounted as a volume at files_dir and, for a file with a mount
// path of its own, again at that path.
type serviceFiles struct {
	configMap *corev1.ConfigMap // nil without files
	volumes   []corev1.Volume
	mounts    []corev1.VolumeMount
}

// files reads the service's rendered files into a ConfigMap (text as Data,
// anything else as BinaryData) within the ConfigMap's size limit.
func (s *settings) files(svc *providers.ServiceSpec, meta metav1.ObjectMeta) (*serviceFiles, error) {
	out := &serviceFiles{}
	if len(svc.Files) == 0 {
		return out, nil
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta,
	}
	var items []corev1.KeyToPath
	total := 0
	mounted := map[string]string{}
	for _, f := range svc.Files {
		if msgs := validation.IsConfigMapKey(f.Name); len(msgs) > 0 {
			return nil, fmt.Errorf("service %q: file %q cannot be a ConfigMap key: %s", svc.Name, f.Name, strings.Join(msgs, "; "))
		}
		data, err := os.ReadFile(f.HostPath)
		if err != nil {
			return nil, fmt.Errorf("service %q: reading file %q: %w", svc.Name, f.Name, err)
		}
		total += len(data)
		if total > maxConfigMapBytes {
			return nil, fmt.Errorf("service %q: files total more than 1 MiB, the limit of a ConfigMap (at %q)", svc.Name, f.Name)
		}
		if utf8.Valid(data) {
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[f.Name] = string(data)
		} else {
			if cm.BinaryData == nil {
				cm.BinaryData = map[string][]byte{}
			}
			cm.BinaryData[f.Name] = data
		}
		it := corev1.KeyToPath{Key: f.Name, Path: f.Name}
		if f.Mode != 0 {
			m := int32(f.Mode & 0o777)
			it.Mode = &m
		}
		items = append(items, it)

		mnt, err := s.fileMount(svc.Name, f, mounted)
		if err != nil {
			return nil, err
		}
		if mnt != nil {
			out.mounts = append(out.mounts, *mnt)
		}
	}
	out.configMap = cm
	mode := int32(0o644)
	out.volumes = []corev1.Volume{{
		Name: filesVolume,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name},
			Items:                items,
			DefaultMode:          &mode,
		}},
	}}
	out.mounts = append([]corev1.VolumeMount{{Name: filesVolume, MountPath: s.FilesDir, ReadOnly: true}}, out.mounts...)
	return out, nil
}

// fileMount is the extra mount of a file whose mount path is outside
// files_dir, or nil when it has none. mounted maps the paths taken so far
// to their file.
func (s *settings) fileMount(service string, f providers.File, mounted map[string]string) (*corev1.VolumeMount, error) {
	if f.Mount == "" || path.Clean(f.Mount) == path.Join(s.FilesDir, f.Name) {
		return nil, nil
	}
	mp := path.Clean(f.Mount)
	if !path.IsAbs(mp) {
		return nil, fmt.Errorf("service %q: file %q: mount %q is not an absolute path", service, f.Name, f.Mount)
	}
	if mp == s.FilesDir || strings.HasPrefix(mp, s.FilesDir+"/") {
		return nil, fmt.Errorf("service %q: file %q: mount %q is inside files_dir %q, where every file already is", service, f.Name, f.Mount, s.FilesDir)
	}
	if other, dup := mounted[mp]; dup {
		return nil, fmt.Errorf("service %q: files %q and %q are both mounted at %q", service, other, f.Name, mp)
	}
	mounted[mp] = f.Name
	return &corev1.VolumeMount{Name: filesVolume, MountPath: mp, SubPath: f.Name, ReadOnly: true}, nil
}

// container is the service's one container: image, arguments, sorted
// environment, ports, resources and a readiness probe that mirrors the
// health check.
func (s *settings) container(o *objects, svc *providers.ServiceSpec, mounts []corev1.VolumeMount) corev1.Container {
	c := corev1.Container{
		Name:            o.name,
		Image:           svc.Image,
		Args:            append([]string(nil), svc.Command...),
		ImagePullPolicy: s.pullPolicy,
		VolumeMounts:    mounts,
	}
	envKeys := make([]string, 0, len(svc.Env))
	for k := range svc.Env {
		envKeys = append(envKeys, k)
	}
	sort.Strings(envKeys)
	for _, k := range envKeys {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: svc.Env[k]})
	}
	for _, p := range o.ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: p.KubeName, ContainerPort: p.Container, Protocol: corev1.ProtocolTCP})
	}
	if s.cpu != nil || s.memory != nil {
		rl := corev1.ResourceList{}
		if s.cpu != nil {
			rl[corev1.ResourceCPU] = *s.cpu
		}
		if s.memory != nil {
			rl[corev1.ResourceMemory] = *s.memory
		}
		c.Resources = corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}
	}
	c.ReadinessProbe = readinessProbe(svc.Health, o.ports)
	return c
}

// deployment runs o.replicas pods of the container.
func (s *settings) deployment(o *objects, id identity, c corev1.Container, volumes []corev1.Volume) *appsv1.Deployment {
	grace := int64(gracePeriod)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: id.meta(o.name),
		Spec: appsv1.DeploymentSpec{
			Replicas: &o.replicas,
			Selector: &metav1.LabelSelector{MatchLabels: copyMap(o.selector)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: copyMap(id.labels), Annotations: copyMap(id.annotations)},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{c},
					Volumes:                       volumes,
					NodeSelector:                  copyMap(s.NodeSelector),
					TerminationGracePeriodSeconds: &grace,
				},
			},
		},
	}
}

// service is the Service in front of the pods, one port per service port.
func (s *settings) service(o *objects, id identity) *corev1.Service {
	ks := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: id.meta(o.name),
		Spec: corev1.ServiceSpec{
			Type:     s.serviceType,
			Selector: copyMap(o.selector),
		},
	}
	for _, p := range o.ports {
		ks.Spec.Ports = append(ks.Spec.Ports, corev1.ServicePort{
			Name: p.KubeName, Protocol: corev1.ProtocolTCP,
			Port: p.Container, TargetPort: intstr.FromInt32(p.Container),
		})
	}
	return ks
}

// ingress routes ingress_host and ingress_path to the Service's first
// port (expose = "ingress").
func (s *settings) ingress(o *objects, id identity) *networkingv1.Ingress {
	prefix := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: id.meta(o.name),
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				Host: s.IngressHost,
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path: s.IngressPath, PathType: &prefix,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: o.name,
							Port: networkingv1.ServiceBackendPort{Number: o.ports[0].Container},
						}},
					}},
				}},
			}},
		},
	}
	if s.IngressClass != "" {
		cls := s.IngressClass
		ing.Spec.IngressClassName = &cls
	}
	return ing
}

// readinessProbe mirrors the service's health check inside the cluster so
// that "Ready" and the Service's endpoints mean the same as benchflow's check.
func readinessProbe(h providers.Health, ports []portInfo) *corev1.Probe {
	if h.HTTPPath == "" && !h.TCP {
		return nil
	}
	port := ports[0]
	for _, p := range ports {
		if p.Name == h.PortName {
			port = p
		}
	}
	period := int32(h.Interval.Seconds())
	if period < 1 {
		period = 1
	}
	pr := &corev1.Probe{PeriodSeconds: period, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	if h.HTTPPath != "" {
		p := h.HTTPPath
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		pr.HTTPGet = &corev1.HTTPGetAction{Path: p, Port: intstr.FromInt32(port.Container), Scheme: corev1.URISchemeHTTP}
	} else {
		pr.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(port.Container)}
	}
	return pr
}

// renderYAML prints objects as a multi-document YAML stream, without the
// empty status and creationTimestamp a typed object marshals to.
func renderYAML(objs []runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	for i, obj := range objs {
		j, err := json.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
		var m map[string]any
		if err := json.Unmarshal(j, &m); err != nil {
			return nil, fmt.Errorf("encoding %T: %w", obj, err)
		}
		delete(m, "status")
		pruneTimestamps(m)
		y, err := yaml.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding %T as YAML: %w", obj, err)
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(y)
	}
	return buf.Bytes(), nil
}

// pruneTimestamps removes every null creationTimestamp.
func pruneTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		if ts, ok := t["creationTimestamp"]; ok && ts == nil {
			delete(t, "creationTimestamp")
		}
		for _, x := range t {
			pruneTimestamps(x)
		}
	case []any:
		for _, x := range t {
			pruneTimestamps(x)
		}
	}
}

// objectName makes a DNS-1035 label (what Service names need) from a service
// name: lowercase, [a-z0-9-], starting with a letter, at most 63 bytes.
func objectName(s string) string {
	n := sanitize(strings.ToLower(s), func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	}, '-')
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "svc-" + n
	}
	// Leave room for the "-files" suffix of the ConfigMap.
	return shorten(strings.TrimRight(n, "-"), s, 56, '-')
}

// runNamespace is the namespace of a run: benchflow-<run id lowercased>.
func runNamespace(runID string) string {
	n := sanitize(strings.ToLower(runID), func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	}, '-')
	return shorten(strings.TrimRight("benchflow-"+n, "-"), runID, validation.DNS1123LabelMaxLength, '-')
}

// labelValue makes a valid label value from s. Values that must be changed
// keep a hash of the original so that distinct ids stay distinct.
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	v := sanitize(s, func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.'
	}, '_')
	v = strings.Trim(v, "-_.")
	if len(v) > 54 {
		v = strings.TrimRight(v[:54], "-_.")
	}
	return fmt.Sprintf("%s-%08x", v, hash32(s))
}

// portName makes an IANA service name (≤15 bytes, [a-z0-9-], one letter at
// least) from a pipeline port name, falling back to "p<index>".
func portName(s string, i int) string {
	n := sanitize(strings.ToLower(s), func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	}, '-')
	if len(n) > 15 {
		n = strings.TrimRight(n[:15], "-")
	}
	if len(validation.IsValidPortName(n)) > 0 {
		return fmt.Sprintf("p%d", i)
	}
	return n
}

// sanitize replaces runs of characters not allowed by ok with sep and trims
// sep from both ends.
func sanitize(s string, ok func(rune) bool, sep rune) string {
	var b strings.Builder
	last := sep
	for _, r := range s {
		if ok(r) {
			b.WriteRune(r)
			last = r
		} else if last != sep {
			b.WriteRune(sep)
			last = sep
		}
	}
	return strings.Trim(b.String(), string(sep))
}

// shorten cuts n to max bytes, replacing the tail with a hash of orig so
// two long names stay distinct.
func shorten(n, orig string, max int, sep byte) string {
	if len(n) <= max {
		return n
	}
	h := fmt.Sprintf("%c%08x", sep, hash32(orig))
	return strings.TrimRight(n[:max-len(h)], string(sep)) + h
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// selectorString renders a label map as a label selector.
func selectorString(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	return metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: m})
}
