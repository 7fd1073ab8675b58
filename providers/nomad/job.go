package nomad

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	napi "github.com/hashicorp/nomad/api"

	"github.com/benchflow/benchflow/providers"
)

// taskDirVar is what self.dir resolves to: Nomad interpolates it in
// command arguments and environment values; in file contents it becomes a
// template function call.
const taskDirVar = "${NOMAD_TASK_DIR}"

// ports returns the service's ports, or a single "http" port when it
// declares none.
func ports(spec *providers.ServiceSpec) []providers.Port {
	if len(spec.Ports) > 0 {
		return spec.Ports
	}
	return []providers.Port{{Name: "http", Container: 80}}
}

// primaryPort is the port the endpoint reports and the service registers:
// the health check's port, else the first.
func primaryPort(spec *providers.ServiceSpec) string {
	ps := ports(spec)
	if spec.Health.PortName != "" {
		for _, p := range ps {
			if p.Name == spec.Health.PortName {
				return p.Name
			}
		}
	}
	return ps[0].Name
}

// substituter rewrites the host port numbers the engine handed to the
// service (self.port.<name>) into Nomad's runtime port variables, and
// self.dir into the task directory, so one pipeline works whatever port
// Nomad picks.
type substituter struct {
	re    *regexp.Regexp
	names map[string]string // port number → port label
}

func newSubstituter(s *settings, spec *providers.ServiceSpec) *substituter {
	sub := &substituter{names: map[string]string{}}
	var alts []string
	for _, p := range ports(spec) {
		if p.Host <= 0 || (s.Driver == "docker" && p.Container > 0) {
			continue
		}
		n := strconv.Itoa(p.Host)
		if _, dup := sub.names[n]; !dup {
			sub.names[n] = p.Name
			alts = append(alts, n)
		}
	}
	expr := regexp.QuoteMeta(taskDirVar)
	if len(alts) > 0 {
		expr = `\b(` + strings.Join(alts, "|") + `)\b|` + expr
	}
	sub.re = regexp.MustCompile(expr)
	return sub
}

// arg rewrites an argument or environment value (Nomad interpolation).
func (sub *substituter) arg(v string) string {
	return sub.re.ReplaceAllStringFunc(v, func(m string) string {
		if m == taskDirVar {
			return m
		}
		return "${NOMAD_PORT_" + envName(sub.names[m]) + "}"
	})
}

// template escapes text for Nomad's template engine and rewrites ports and
// the task directory into template calls.
func (sub *substituter) template(v string) string {
	v = strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`).Replace(v)
	return sub.re.ReplaceAllStringFunc(v, func(m string) string {
		if m == taskDirVar {
			return `{{ env "NOMAD_TASK_DIR" }}`
		}
		return `{{ env "NOMAD_PORT_` + envName(sub.names[m]) + `" }}`
	})
}

// envName is how Nomad spells a port label in NOMAD_PORT_<label>.
func envName(label string) string {
	return strings.NewReplacer("-", "_", ".", "_").Replace(label)
}

// chrootDirs are the host folders Nomad's exec driver puts in a task's
// chroot by default (the client's chroot_env; Nomad 1.6
// client/config.DefaultChrootEnv).
var chrootDirs = []string{"/bin", "/etc", "/lib", "/lib32", "/lib64", "/run/resolvconf", "/run/systemd/resolve", "/sbin", "/usr"}

// checkExecCommand refuses, for the exec driver, a command that is an
// absolute host path outside the chroot: Nomad would build the chroot
// (seconds, gigabytes) and then fail with "file … not found under path
// …/alloc/<id>/<task>".
func checkExecCommand(driver string, command []string) error {
	if driver != "exec" || len(command) == 0 || !strings.HasPrefix(command[0], "/") {
		return nil
	}
	for _, d := range chrootDirs {
		if command[0] == d || strings.HasPrefix(command[0], d+"/") {
			return nil
		}
	}
	return fmt.Errorf("driver \"exec\" runs the task in a chroot holding only the Nomad client's chroot_env (by default %s), and the command %s is outside it: "+
		"use driver = \"raw_exec\", or install the program under /usr/local/bin on every client", strings.Join(chrootDirs, ", "), command[0])
}

// jobSpec is everything buildJob needs.
type jobSpec struct {
	s       *settings
	req     *providers.ProvisionRequest
	count   int
	jobID   string
	service string // the service name, in Consul or Nomad
	tag     string // the service tag unique to the trial
	// envVar is a Nomad variable whose items envTemplate puts into the
	// task's environment ("" for none).
	envVar string
}

// envTemplate reads the agents' token and targets from the variable at
// path (the job's own, nomad/jobs/<job id>, which its tasks may read)
// into the task's environment: the job carries neither. Values are
// double-quoted (printf %q), which Nomad's env file parser reads back.
func envTemplate(path string) *napi.Template {
	data := fmt.Sprintf("{{ with nomadVar %q }}%s={{ printf \"%%q\" .%s.Value }}\n%s={{ printf \"%%q\" .%s.Value }}\n{{ end }}",
		path, providers.AgentTokenEnv, varKeyToken, providers.AgentTargetsEnv, varKeyTargets)
	dest, change, env := "secrets/agent.env", "noop", true
	return &napi.Template{EmbeddedTmpl: &data, DestPath: &dest, ChangeMode: &change, Envvars: &env}
}

// buildJob turns a service into a Nomad service job: one group with a
// dynamic port per service port, one task, the service's files as
// templates and a service, in Consul or Nomad (service_provider), with the
// health check. The checks use only what both providers accept: Nomad's
// own checks take http and tcp, an interval and timeout of at least 1s,
// and none of Consul's extras (success_before_passing, expose, tls_*…).
func buildJob(js jobSpec) (*napi.Job, error) {
	s, spec := js.s, &js.req.Service
	sub := newSubstituter(s, spec)
	job := napi.NewServiceJob(js.jobID, js.jobID, s.Region, 50)
	if s.Namespace != "" {
		job.Namespace = &s.Namespace
	}
	job.Datacenters = append([]string(nil), s.Datacenters...)
	job.Meta = map[string]string{
		providers.LabelManaged: "true",
		providers.LabelRun:     js.req.RunID,
		providers.LabelTrial:   js.req.TrialID,
		providers.LabelService: spec.Name,
	}
	// Who created the job, so gc keeps the jobs of runs in progress.
	addOwnerLabels(job.Meta)

	tg := napi.NewTaskGroup(s.Group, js.count)
	nw := &napi.NetworkResource{}
	var labels []string
	for _, p := range ports(spec) {
		port := napi.Port{Label: p.Name}
		if s.Driver == "docker" {
			port.To = p.Container
			if port.To == 0 {
				port.To = -1 // map to the same port inside the container
			}
		}
		nw.DynamicPorts = append(nw.DynamicPorts, port)
		labels = append(labels, p.Name)
	}
	tg.Networks = []*napi.NetworkResource{nw}

	minHealthy, zero := time.Duration(0), false
	healthyDeadline, progress := s.ready, s.ready+time.Minute
	health := "checks"
	svc := &napi.Service{
		Name:      js.service,
		PortLabel: primaryPort(spec),
		Provider:  s.ServiceProvider,
		Tags:      []string{"benchflow", "benchflow-run-" + serviceName(js.req.RunID), js.tag},
	}
	interval := spec.Health.Interval
	if interval < time.Second {
		interval = time.Second // Nomad's minimum check interval
	}
	timeout := 2 * time.Second
	switch {
	case spec.Health.HTTPPath != "":
		svc.Checks = []napi.ServiceCheck{{Name: "benchflow-http", Type: "http", Path: spec.Health.HTTPPath,
			PortLabel: svc.PortLabel, Interval: interval, Timeout: timeout}}
	case spec.Health.TCP:
		svc.Checks = []napi.ServiceCheck{{Name: "benchflow-tcp", Type: "tcp",
			PortLabel: svc.PortLabel, Interval: interval, Timeout: timeout}}
	default:
		health = "task_states"
	}
	tg.Services = []*napi.Service{svc}
	maxPar := max(js.count, 1)
	tg.Update = &napi.UpdateStrategy{
		MaxParallel: &maxPar, HealthCheck: &health, MinHealthyTime: &minHealthy,
		HealthyDeadline: &healthyDeadline, ProgressDeadline: &progress, AutoRevert: &zero,
	}
	attempts := 0
	tg.RestartPolicy = &napi.RestartPolicy{Attempts: &attempts, Mode: new("fail")}
	tg.ReschedulePolicy = &napi.ReschedulePolicy{Attempts: &attempts, Unlimited: &zero}

	task := napi.NewTask(s.Task, s.Driver)
	task.Resources = &napi.Resources{CPU: &s.CPU, MemoryMB: &s.Memory}
	if len(spec.Env) > 0 {
		task.Env = map[string]string{}
		for k, v := range spec.Env {
			task.Env[k] = sub.arg(v)
		}
	}
	args := make([]string, len(spec.Command))
	for i, a := range spec.Command {
		args[i] = sub.arg(a)
	}
	cfg := map[string]any{}
	switch s.Driver {
	case "docker":
		if spec.Image == "" {
			return nil, fmt.Errorf("service %q: the docker driver needs image", spec.Name)
		}
		cfg["image"] = spec.Image
		cfg["ports"] = labels
		if len(args) > 0 {
			cfg["command"] = args[0]
			if len(args) > 1 {
				cfg["args"] = args[1:]
			}
		}
	default:
		if len(args) == 0 {
			return nil, fmt.Errorf("service %q: the %s driver needs command", spec.Name, s.Driver)
		}
		cfg["command"] = args[0]
		if len(args) > 1 {
			cfg["args"] = args[1:]
		}
	}
	var volumes []string
	for _, f := range spec.Files {
		b, err := os.ReadFile(f.HostPath)
		if err != nil {
			return nil, fmt.Errorf("reading file %q of service %q: %w", f.Name, spec.Name, err)
		}
		if !utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 {
			return nil, fmt.Errorf("file %q of service %q is binary: Nomad templates carry text only (serve binary payloads from the image or an artifact)", f.Name, spec.Name)
		}
		data, dest := sub.template(string(b)), "local/"+f.Name
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		perms, change := fmt.Sprintf("%o", mode), "noop"
		task.Templates = append(task.Templates, &napi.Template{
			EmbeddedTmpl: &data, DestPath: &dest, Perms: &perms, ChangeMode: &change,
		})
		if s.Driver == "docker" && f.Mount != "" {
			volumes = append(volumes, dest+":"+f.Mount)
		}
	}
	if len(volumes) > 0 {
		cfg["volumes"] = volumes
	}
	if js.envVar != "" {
		task.Templates = append(task.Templates, envTemplate(js.envVar))
	}
	task.Config = cfg
	tg.AddTask(task)
	job.AddTaskGroup(tg)
	return job, nil
}
