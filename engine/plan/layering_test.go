package plan

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeclaringLayerLinksNoRunningStack holds the line docs/architecture.md
// draws: the packages that parse, plan and judge a pipeline link no
// Parquet/Arrow, gRPC, Kubernetes, Docker or Nomad package (QUIC is next:
// engine/steps still imports engine/load for the load options).
func TestDeclaringLayerLinksNoRunningStack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool on PATH")
	}
	running := []string{
		"github.com/apache/arrow-go/", "google.golang.org/grpc", "k8s.io/",
		"github.com/docker/", "github.com/hashicorp/nomad/", "github.com/hashicorp/consul/",
	}
	pkgs := []string{"engine/pipeline", "engine/steps", "engine/hclconf", "engine/starconf", "engine/plan", "engine/trust"}
	for _, p := range pkgs {
		out, err := exec.Command("go", "list", "-deps", "github.com/benchflow/benchflow/"+p).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", p, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 50 {
			t.Fatalf("go list -deps %s listed %d packages: %q", p, len(deps), deps)
		}
		for _, d := range deps {
			for _, r := range running {
				if strings.HasPrefix(d, r) {
					t.Errorf("%s links %s (docs/architecture.md: the declaring layer imports nothing that runs)", p, d)
				}
			}
		}
	}
}
