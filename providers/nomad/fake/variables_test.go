package fake_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/benchflow/benchflow/providers/nomad/fake"
)

// TestNomadVariablesAndEnvTemplate: variables are stored, read, listed
// without their items and deleted as Nomad 1.6 does, and a raw_exec task
// gets a variable of its own job into its environment through a template
// with env = true, while a task reading another job's variable fails.
func TestNomadVariablesAndEnvTemplate(t *testing.T) {
	n := fake.NewNomad(nil)
	defer n.Close()
	n.RunRawExec = true
	if a := do(t, "PUT", n.URL()+"/v1/var/nomad/jobs/tok", `{"Items": {"token": "abc123", "targets": "http://a/ \"q\" http://b/"}}`, nil); a.code != 200 ||
		!strings.Contains(a.body, `"Path":"nomad/jobs/tok"`) || !strings.Contains(a.body, `"Namespace":"default"`) {
		t.Fatalf("PUT variable: %d %s", a.code, a.body)
	}
	if a := do(t, "PUT", n.URL()+"/v1/var/nomad/jobs/empty", `{"Items": {}}`, nil); a.code != 400 {
		t.Errorf("PUT a variable without items: %d %s, want 400", a.code, a.body)
	}
	if a := do(t, "GET", n.URL()+"/v1/var/nomad/jobs/tok", "", nil); a.code != 200 || !strings.Contains(a.body, `"token":"abc123"`) {
		t.Errorf("GET variable: %d %s", a.code, a.body)
	}
	if a := do(t, "GET", n.URL()+"/v1/vars?prefix=nomad/jobs/", "", nil); a.code != 200 || !strings.Contains(a.body, `"Path":"nomad/jobs/tok"`) || strings.Contains(a.body, "abc123") {
		t.Errorf("list variables: %d %s, want the path without the items", a.code, a.body)
	}
	tmpl := `{{ with nomadVar \"nomad/jobs/JOB\" }}BENCHFLOW_AGENT_TOKEN={{ .token }}\nTARGETS={{ printf \"%q\" .targets.Value }}\n{{ end }}`
	job := func(id, readVar string) string {
		return `{"Job": {"ID": "` + id + `", "Name": "` + id + `", "Type": "service", "Datacenters": ["dc1"],
		 "TaskGroups": [{"Name": "g", "Count": 1,
		   "Tasks": [{"Name": "t", "Driver": "raw_exec",
		     "Config": {"command": "/bin/sh", "args": ["-c", "printenv BENCHFLOW_AGENT_TOKEN TARGETS"]},
		     "Templates": [{"EmbeddedTmpl": "` + strings.Replace(tmpl, "JOB", readVar, 1) + `", "DestPath": "secrets/agent.env", "Envvars": true, "ChangeMode": "noop"}],
		     "Resources": {"CPU": 100, "MemoryMB": 64}}]}]}}`
	}
	if a := do(t, "PUT", n.URL()+"/v1/jobs", job("tok", "tok"), nil); a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	// The task prints its environment and ends (its log is kept then).
	var allocs []struct{ ID, ClientStatus string }
	eventually(t, "the task's end", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/tok/allocations", "", nil).body, &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == "failed"
	})
	if out := do(t, "GET", n.URL()+"/v1/client/fs/logs/"+allocs[0].ID+"?task=t&type=stdout&plain=true", "", nil).body; out != "abc123\nhttp://a/ \"q\" http://b/\n" {
		t.Errorf("the task's output %q: the template's variables are not in its environment", out)
	}
	// Another job's variable is not the task's to read.
	if a := do(t, "PUT", n.URL()+"/v1/jobs", job("thief", "tok"), nil); a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var failed []struct {
		ClientStatus string
		TaskStates   map[string]struct {
			Events []struct{ Type, DisplayMessage string }
		}
	}
	eventually(t, "a failed allocation", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/thief/allocations", "", nil).body, &failed)
		return len(failed) == 1 && failed[0].ClientStatus == "failed"
	})
	ev, _ := json.Marshal(failed[0].TaskStates)
	if !strings.Contains(string(ev), "Missing: nomad.var.block(nomad/jobs/tok@default.global)") {
		t.Errorf("the thief's task events: %s", ev)
	}
	if a := do(t, "DELETE", n.URL()+"/v1/var/nomad/jobs/tok", "", nil); a.code != 204 {
		t.Errorf("DELETE variable: %d %s, want 204", a.code, a.body)
	}
	if a := do(t, "GET", n.URL()+"/v1/var/nomad/jobs/tok", "", nil); a.code != 404 || !strings.Contains(a.body, "variable not found") {
		t.Errorf("GET a deleted variable: %d %s, want 404", a.code, a.body)
	}
	if _, ok := n.Variable("", "nomad/jobs/tok"); ok {
		t.Error("Variable still finds the deleted variable")
	}
}

// TestNomadAgentEmptyTokenExits: the fake runs raw_exec tasks with the
// real binary, so an agent whose variable holds an empty token, rendered
// as BENCHFLOW_AGENT_TOKEN="" by the provider's template, gets an empty
// variable (not the two quote characters) and exits 1 with "no token",
// its allocation failed, as on real Nomad 1.6.5.
func TestNomadAgentEmptyTokenExits(t *testing.T) {
	bin := os.Getenv("BENCHFLOW_BIN")
	if bin == "" {
		t.Skip("needs the benchflow binary: set BENCHFLOW_BIN (make test does)")
	}
	n := fake.NewNomad(nil)
	defer n.Close()
	n.RunRawExec = true
	if a := do(t, "PUT", n.URL()+"/v1/var/nomad/jobs/agents", `{"Items": {"token": "", "targets": "http://127.0.0.1:1/"}}`, nil); a.code != 200 {
		t.Fatalf("PUT variable: %d %s", a.code, a.body)
	}
	tmpl := `{{ with nomadVar \"nomad/jobs/agents\" }}BENCHFLOW_AGENT_TOKEN={{ printf \"%q\" .token.Value }}\nBENCHFLOW_AGENT_TARGETS={{ printf \"%q\" .targets.Value }}\n{{ end }}`
	job := `{"Job": {"ID": "agents", "Name": "agents", "Type": "service", "Datacenters": ["dc1"],
	 "TaskGroups": [{"Name": "servers", "Count": 1, "Networks": [{"DynamicPorts": [{"Label": "agent"}]}],
	   "Tasks": [{"Name": "web", "Driver": "raw_exec",
	     "Config": {"command": "` + bin + `", "args": ["agent", "--listen", "${NOMAD_ADDR_agent}", "--index", "${NOMAD_ALLOC_INDEX}", "--linger"]},
	     "Templates": [{"EmbeddedTmpl": "` + tmpl + `", "DestPath": "secrets/agent.env", "Envvars": true, "ChangeMode": "noop"}],
	     "Resources": {"CPU": 100, "MemoryMB": 64}}]}]}}`
	if a := do(t, "PUT", n.URL()+"/v1/jobs", job, nil); a.code != 200 {
		t.Fatalf("register: %d %q", a.code, a.body)
	}
	var allocs []struct {
		ID, ClientStatus string
		TaskStates       map[string]struct {
			Events []struct {
				Type     string
				ExitCode int
			}
		}
	}
	eventually(t, "the agent's allocation to fail", func() bool {
		decode(t, do(t, "GET", n.URL()+"/v1/job/agents/allocations", "", nil).body, &allocs)
		return len(allocs) == 1 && allocs[0].ClientStatus == "failed"
	})
	exit := -1
	for _, e := range allocs[0].TaskStates["web"].Events {
		if e.Type == "Terminated" {
			exit = e.ExitCode
		}
	}
	if exit != 1 {
		t.Errorf("the agent's Terminated event has exit code %d, want 1: %+v", exit, allocs[0].TaskStates)
	}
	if out := do(t, "GET", n.URL()+"/v1/client/fs/logs/"+allocs[0].ID+"?task=web&type=stderr&plain=true", "", nil).body; !strings.Contains(out, "Error: no token") {
		t.Errorf("the agent's stderr %q lacks %q", out, "Error: no token")
	}
}
