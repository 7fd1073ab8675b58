package k8s

import "testing"

// BenchmarkRender measures building and printing the manifests of one
// service (what `benchflow render` and every Provision do before calling
// the API).
func BenchmarkRender(b *testing.B) {
	p, err := New("cluster", Config{Expose: ExposeIngress, IngressClass: "nginx", CPU: "1", Memory: "128Mi"})
	if err != nil {
		b.Fatal(err)
	}
	req := nginxRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Render(req); err != nil {
			b.Fatal(err)
		}
	}
}
