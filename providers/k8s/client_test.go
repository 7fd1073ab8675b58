package k8s

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// apiRecorder stands in for an API server: it answers each request with a
// JSON object of the kind the path names and records what it was sent.
type apiRecorder struct {
	mu   sync.Mutex
	reqs []string
}

var recorderKinds = map[string]string{
	"namespaces": "Namespace", "nodes": "Node", "pods": "Pod", "configmaps": "ConfigMap",
	"secrets": "Secret", "services": "Service", "events": "Event", "deployments": "Deployment",
	"ingresses": "Ingress", "endpointslices": "EndpointSlice",
}

func (a *apiRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	a.mu.Lock()
	a.reqs = append(a.reqs, fmt.Sprintf("%s %s?%s accept=%q content-type=%q agent=%q body=%x",
		r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.UserAgent(), body))
	a.mu.Unlock()
	if r.URL.Path == "/version" {
		io.WriteString(w, `{"major":"1","minor":"31","gitVersion":"v1.31.2"}`)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/log") {
		io.WriteString(w, "a log line\n")
		return
	}
	var gv string
	var segs []string
	switch p := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); {
	case len(p) >= 3 && p[0] == "api":
		gv, segs = p[1], p[2:]
	case len(p) >= 4 && p[0] == "apis":
		gv, segs = p[1]+"/"+p[2], p[3:]
	default:
		http.NotFound(w, r)
		return
	}
	if segs[0] == "namespaces" && len(segs) >= 3 {
		segs = segs[2:]
	}
	kind := recorderKinds[segs[0]]
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodDelete:
		io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	case r.Method == http.MethodGet && len(segs) == 1:
		fmt.Fprintf(w, `{"kind":"%sList","apiVersion":%q,"items":[{"metadata":{"name":"one"}},{"metadata":{"name":"two"}}]}`, kind, gv)
	default:
		name := "created"
		if len(segs) > 1 {
			name = segs[1]
		}
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"name":%q}}`, kind, gv, name)
	}
}

// TestClientMatchesClientset runs the provider's calls through NewClient and
// through client-go's full clientset against the same stand-in API server:
// the requests (method, path, query, negotiated encodings, user agent and
// body bytes) and the decoded answers must be the same.
func TestClientMatchesClientset(t *testing.T) {
	run := func(c *Client) ([]string, []string) {
		ctx := context.Background()
		var got []string
		note := func(v any, err error) {
			if err != nil {
				t.Fatalf("call %d: %v", len(got), err)
			}
			got = append(got, fmt.Sprintf("%T %v", v, v))
		}
		names := func(items any) string {
			var out []string
			v := reflect.ValueOf(items)
			for i := range v.Len() {
				out = append(out, v.Index(i).FieldByName("Name").String())
			}
			return strings.Join(out, ",")
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: map[string]string{"dev.benchflow.managed": "true"}}}
		o, err := c.Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		note(o.Name, err)
		o, err = c.Namespaces().Get(ctx, "bench", metav1.GetOptions{})
		note(o.Name, err)
		nodes, err := c.Nodes().List(ctx, metav1.ListOptions{LabelSelector: "a=b"})
		note(names(nodes.Items), err)
		pods, err := c.Pods("bench").List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "status.phase=Running", Limit: 5})
		note(names(pods.Items), err)
		pods, err = c.Pods("").List(ctx, metav1.ListOptions{})
		note(names(pods.Items), err)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "files"}, Data: map[string]string{"nginx.conf": "events {}\n"}}
		cmo, err := c.ConfigMaps("bench").Create(ctx, cm, metav1.CreateOptions{})
		note(cmo.Name, err)
		secs, err := c.Secrets("").List(ctx, metav1.ListOptions{LabelSelector: "dev.benchflow.managed=true"})
		note(names(secs.Items), err)
		svc, err := c.Services("bench").Get(ctx, "web", metav1.GetOptions{})
		note(svc.Name, err)
		evs, err := c.Events("bench").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-1"})
		note(names(evs.Items), err)
		one := int32(1)
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &one}}
		depo, err := c.Deployments("bench").Create(ctx, dep, metav1.CreateOptions{})
		note(depo.Name, err)
		fg := metav1.DeletePropagationForeground
		note("deleted", c.Deployments("bench").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}))
		ings, err := c.Ingresses("").List(ctx, metav1.ListOptions{})
		note(names(ings.Items), err)
		sl, err := c.EndpointSlices("bench").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=web"})
		note(names(sl.Items), err)
		tail := int64(20)
		raw, err := c.PodLogs("bench", "web-1", &corev1.PodLogOptions{Container: "nginx", Previous: true, TailLines: &tail}).DoRaw(ctx)
		note(string(raw), err)
		v, err := c.ServerVersion(ctx)
		note(v.GitVersion, err)
		return got, []string{c.PortForwardURL("bench", "web-1").String()}
	}

	var reqs [2][]string
	var results, urls [2][]string
	for i := range 2 {
		rec := &apiRecorder{}
		api := httptest.NewServer(rec)
		rc := &rest.Config{Host: api.URL}
		var c *Client
		if i == 0 {
			var err error
			if c, err = NewClient(rc); err != nil {
				t.Fatal(err)
			}
		} else {
			cs, err := kubernetes.NewForConfig(rc)
			if err != nil {
				t.Fatal(err)
			}
			c = clientFor(cs)
		}
		results[i], urls[i] = run(c)
		api.Close()
		reqs[i] = rec.reqs
		// The two servers listen on different ports.
		for j, u := range urls[i] {
			urls[i][j] = strings.Replace(u, api.URL, "http://api", 1)
		}
	}
	if len(reqs[0]) != 15 {
		t.Errorf("NewClient's client sent %d requests, want 15:\n%s", len(reqs[0]), strings.Join(reqs[0], "\n"))
	}
	if !reflect.DeepEqual(reqs[0], reqs[1]) {
		t.Errorf("requests differ:\nNewClient:\n%s\nclientset:\n%s", strings.Join(reqs[0], "\n"), strings.Join(reqs[1], "\n"))
	}
	if !reflect.DeepEqual(results[0], results[1]) {
		t.Errorf("answers differ:\nNewClient: %q\nclientset: %q", results[0], results[1])
	}
	if !reflect.DeepEqual(urls[0], urls[1]) || urls[0][0] != "http://api/api/v1/namespaces/bench/pods/web-1/portforward" {
		t.Errorf("port-forward URLs: NewClient %v, clientset %v", urls[0], urls[1])
	}
	for _, r := range results[0] {
		if strings.HasSuffix(r, " ") || strings.Contains(r, "<nil>") {
			t.Errorf("empty answer %q", r)
		}
	}
	t.Logf("answers: %q", results[0])
}
