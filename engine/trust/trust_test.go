package trust

import (
	"testing"

	"github.com/benchflow/benchflow/engine/sandbox"
)

func TestReach(t *testing.T) {
	fixed := map[string]bool{"8080": true}
	for _, c := range []struct{ url, want string }{
		{"${service.web.url}/", "service"},
		{"http://127.0.0.1:0/hello", "service"}, // service.NAME.port before provisioning
		{"https://[::1]:0/", "service"},
		{"http://127.0.0.1:8080/", "loopback"},
		{"http://localhost:8080/x", "loopback"},
		{"http://127.0.0.2:8080/", "loopback"},
		{"http://127.0.0.1:8081/", "host-loopback"},
		{"http://127.0.0.1/", "host-loopback"},
		{"https://localhost/", "host-loopback"},
		{"http://192.0.2.1:8080/", "outside"},
		{"http://example.com/", "outside"},
		{"not a url", "outside"},
		{"", "outside"},
	} {
		if got := reach(c.url, fixed); got != c.want {
			t.Errorf("reach(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}

func TestMissing(t *testing.T) {
	p := &Plan{Needs: []Need{{Grant: sandbox.Grant("docker")}, {Grant: sandbox.GrantTune}}}
	if m := p.Missing([]sandbox.Grant{sandbox.GrantTune}); len(m) != 1 || m[0].Grant != sandbox.Grant("docker") {
		t.Errorf("Missing = %v, want docker", m)
	}
	if m := p.Missing([]sandbox.Grant{sandbox.Grant("docker"), sandbox.GrantTune}); len(m) != 0 {
		t.Errorf("Missing = %v, want none", m)
	}
}
