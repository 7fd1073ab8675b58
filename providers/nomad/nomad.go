package nomad

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	napi "github.com/hashicorp/nomad/api"

	capi "github.com/hashicorp/consul/api"

	"github.com/benchflow/benchflow/providers"
	"github.com/benchflow/benchflow/providers/nomad/apisix"
	"github.com/benchflow/benchflow/providers/nomad/consul"
)

// Type is the nomad provider type, registered in init.
var Type = providers.TypeOf(providers.Spec[Config]{
	Name:      "nomad",
	New:       newFromConfig,
	Attrs:     Attrs,
	GC:        GC,
	Agents:    true,
	Infra:     Infra,
	Preflight: Preflight,
	Grant:     Grant,
})

// Infra are the processes of a Nomad deployment on this machine: the
// agent (and its executors), Consul, and the gateways a job may sit
// behind (APISIX on OpenResty with its etcd, Envoy, Traefik, HAProxy).
// The machine accounting counts them as infrastructure only in a trial
// with a nomad service.
var Infra = []string{"nomad", "consul", "apisix", "openresty", "etcd", "envoy", "traefik", "haproxy"}

func init() { providers.Register(Type) }

// Attrs are the Endpoint.Attrs keys a nomad deployment sets, exposed to
// pipelines as service.<name>.<attr>. gateway_url is "" without a gateway,
// consul_service "" with service_provider "nomad"; service is the
// registered name in both cases.
var Attrs = []string{"allocations", "consul_service", "gateway_url", "group", "job", "service", "task"}

var (
	_ providers.Provider     = (*Provider)(nil)
	_ providers.ListenPorter = (*Provider)(nil)
	_ providers.ServiceDirer = (*Provider)(nil)
	_ providers.Renderer     = (*Provider)(nil)
	_ providers.Deployment   = (*Deployment)(nil)
)

// Provider deploys services as Nomad jobs registered in Consul (or in
// Nomad's own service discovery), optionally behind an APISIX route.
type Provider struct {
	name string
	s    *settings
	// pollInterval paces the waits that are not blocking queries.
	pollInterval time.Duration
	// stopTimeout bounds Teardown's wait for the allocations to stop.
	stopTimeout time.Duration
	// envVar, for agents, is the Nomad variable a template reads into
	// the task's environment (agents.go).
	envVar string
	// agentStep, for agents, is the step whose load agents the job runs:
	// their logs are named like every provider's agent logs
	// (providers.AgentName) and their processes are the loader's.
	agentStep string
}

// defaultPoll paces the waits that cannot block on an index.
const defaultPoll = 200 * time.Millisecond

// New builds a provider from a request whose Config is a decoded *Config
// (nil means all defaults): Type.New. It validates the config and reads
// the tokens; it contacts nothing.
func New(req *providers.NewRequest) (providers.Provider, error) { return Type.New(req) }

// newFromConfig builds a provider from a decoded config.
func newFromConfig(name string, c *Config) (providers.Provider, error) {
	s, err := resolve(c)
	if err != nil {
		return nil, fmt.Errorf("configuring nomad provider %q: %w", name, err)
	}
	return &Provider{name: name, s: s, pollInterval: defaultPoll, stopTimeout: stopTimeout}, nil
}

// String describes the provider without secrets.
func (p *Provider) String() string {
	return fmt.Sprintf("nomad provider %q at %s (driver %s)", p.name, p.s.Address, p.s.Driver)
}

// ListenPort is the port the task listens on: the container port for the
// docker driver, else the number the engine picked, which the job rewrites
// into ${NOMAD_PORT_<name>} (see buildJob).
func (p *Provider) ListenPort(pt providers.Port) int {
	if p.s.Driver == "docker" && pt.Container > 0 {
		return pt.Container
	}
	return pt.Host
}

// ServiceDir is self.dir: the task's local directory, where the service's
// files are written as templates.
func (p *Provider) ServiceDir(string) string { return taskDirVar }

// Render prints the job Provision would register, as JSON (what `nomad job
// run -json` accepts: {"Job": …}). It contains no token.
func (p *Provider) Render(req *providers.ProvisionRequest) ([]byte, error) {
	job, err := buildJob(p.jobSpec(req))
	if err != nil {
		return nil, fmt.Errorf("rendering nomad job for %q: %w", req.Service.Name, err)
	}
	// The agent fills in its own region on registration; a file needs
	// one, or `nomad job validate` refuses it.
	if job.Region == nil || *job.Region == "" {
		job.Region = new("global")
	}
	return json.MarshalIndent(map[string]any{"Job": job}, "", "  ")
}

func (p *Provider) jobSpec(req *providers.ProvisionRequest) jobSpec {
	count := p.s.Count
	if count == 0 {
		count = req.Service.Replicas
	}
	if count == 0 {
		count = 1
	}
	id := p.s.JobName
	if id == "" {
		id = serviceName("benchflow-" + req.Service.Name + "-" + req.RunID)
	}
	tag := "benchflow-trial-" + serviceName(req.TrialID)
	return jobSpec{s: p.s, req: req, count: count, jobID: id, service: serviceName(id), tag: tag, envVar: p.envVar}
}

// Deployment is one provisioned Nomad job.
type Deployment struct {
	p        *Provider
	nomad    *napi.Client
	admin    *apisix.Client
	jobID    string
	objectID string // APISIX route and upstream id
	route    bool
	upstream bool
	consul   *capi.Client // where the job's service registers; nil with service_provider "nomad"
	service  string       // the registered service name
	endpoint providers.Endpoint
	logf     func(string, ...any)
	// logDir is the trial's logs folder (ProvisionRequest.LogDir) and
	// serviceName the service's name in the pipeline, which names the
	// log files.
	logDir      string
	serviceName string
	// agentStep is set for a job of load agents (Provider.agentStep).
	agentStep string
	// registered is set once the job may exist in Nomad; regIndex is the
	// registration's index: this trial's allocations were created after
	// it, the earlier trials' (same job id, purged) before.
	registered bool
	regIndex   uint64
	// allocs are the trial's running allocations (Processes), procMu
	// guards nodeLocal (which client nodes run on this machine) and
	// allocContainer (the container id of a docker task, by allocation).
	allocs         []allocAddr
	procMu         sync.Mutex
	nodeLocal      map[string]bool
	allocContainer map[string]string
}

// Endpoint is the first allocation's address; Attrs carry gateway_url,
// job, group, task, allocations, service and consul_service.
func (d *Deployment) Endpoint() providers.Endpoint { return d.endpoint }

func (p *Provider) nomadClient() (*napi.Client, error) {
	cfg := napi.DefaultConfig()
	cfg.Address = p.s.Address
	cfg.Region = p.s.Region
	cfg.Namespace = p.s.Namespace
	cfg.SecretID = p.s.token
	c, err := napi.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating Nomad client for %s: %w", p.s.Address, err)
	}
	return c, nil
}

// Provision registers the job, waits for its evaluation, allocations,
// deployment and Consul health (or, with service_provider "nomad", Nomad's
// registrations), then (with gateway = true) creates the
// APISIX upstream and route and waits until the gateway answers through
// it. On any error everything it created is removed before it returns.
func (p *Provider) Provision(ctx context.Context, req *providers.ProvisionRequest) (providers.Deployment, error) {
	d, err := p.provision(ctx, req)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%w (ready_timeout %s)", err, p.s.ready)
	}
	if err != nil {
		if d != nil {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout+drainTimeout+inUseTimeout)
			defer cancel()
			if terr := d.Teardown(tctx); terr != nil {
				err = errors.Join(err, fmt.Errorf("cleaning up: %w", terr))
			}
		}
		return nil, err
	}
	return d, nil
}

func (p *Provider) provision(ctx context.Context, req *providers.ProvisionRequest) (*Deployment, error) {
	logf := req.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if p.s.gatewayErr != nil {
		return nil, p.s.gatewayErr
	}
	js := p.jobSpec(req)
	if js.count < 1 {
		return nil, fmt.Errorf("count %d: a job needs at least one allocation", js.count)
	}
	if err := checkExecCommand(p.s.Driver, req.Service.Command); err != nil {
		return nil, err
	}
	job, err := buildJob(js)
	if err != nil {
		return nil, err
	}
	nc, err := p.nomadClient()
	if err != nil {
		return nil, err
	}
	var cc *capi.Client
	if p.s.useConsul() {
		if cc, err = consul.NewClient(p.s.ConsulAddress, p.s.consulToken); err != nil {
			return nil, err
		}
	}
	d := &Deployment{p: p, nomad: nc, consul: cc, service: js.service, jobID: js.jobID, logf: logf,
		objectID: apisixID(js.jobID), logDir: req.LogDir, serviceName: req.Service.Name, agentStep: p.agentStep}
	if p.s.Gateway {
		if d.admin, err = apisix.New(p.s.APISIXAdmin, p.s.adminKey, nil); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, p.s.ready)
	defer cancel()

	logf("nomad: registering job %s (count %d, driver %s)", js.jobID, js.count, p.s.Driver)
	resp, _, err := nc.Jobs().Register(job, (&napi.WriteOptions{}).WithContext(ctx))
	if err != nil {
		err = fmt.Errorf("registering job %q at %s: %w", js.jobID, p.s.Address, err)
		if isHTTPError(err) || isRefused(err) {
			return nil, err // refused: nothing was registered
		}
		d.registered = true
		return d, err // no answer: the job may exist, so clean up
	}
	d.registered, d.regIndex = true, resp.JobModifyIndex
	// From here on the job exists: d is returned with every error so
	// Provision tears it down.
	if err := d.waitEval(ctx, resp.EvalID); err != nil {
		return d, err
	}
	allocs, err := d.waitAllocs(ctx, js.count)
	if err != nil {
		return d, err
	}
	if err := d.waitDeployment(ctx); err != nil {
		return d, err
	}
	var insts []consul.Instance
	if cc != nil {
		logf("consul: waiting for %d passing instances of %s", js.count, js.service)
		insts, err = consul.WaitPassing(ctx, cc, js.service, js.tag, js.count, 5*time.Second)
	} else {
		// The deployment gated on the checks Nomad runs; the
		// registrations are what a client (and APISIX's nodes) sees.
		logf("nomad: waiting for %d registrations of service %s", js.count, js.service)
		insts, err = d.waitRegistered(ctx, js.tag, js.count)
	}
	if err != nil {
		return d, err
	}

	d.allocs = allocs
	primary := primaryPort(&req.Service)
	first := allocs[0]
	ep := providers.Endpoint{Scheme: "http", Host: first.host, Port: first.ports[primary], Ports: first.ports,
		Attrs: map[string]string{
			"job": js.jobID, "group": p.s.Group, "task": p.s.Task,
			"service": js.service, "consul_service": "", "gateway_url": "",
		}}
	if cc != nil {
		ep.Attrs["consul_service"] = js.service
	}
	var addrs []string
	for _, a := range allocs {
		addrs = append(addrs, net.JoinHostPort(a.host, strconv.Itoa(a.ports[primary])))
	}
	ep.Attrs["allocations"] = strings.Join(addrs, ",")
	d.endpoint = ep

	if p.s.Gateway {
		gw, err := d.gateway(ctx, req.RunID, js.service, insts, req.Service.Health.HTTPPath)
		if err != nil {
			return d, err
		}
		d.endpoint.Attrs["gateway_url"] = gw
	}
	return d, nil
}

// waitEval waits for the registration's evaluation and turns failed
// placements into an error naming the reasons.
func (d *Deployment) waitEval(ctx context.Context, evalID string) error {
	if evalID == "" {
		return nil
	}
	var index uint64
	for {
		ev, meta, err := d.nomad.Evaluations().Info(evalID, (&napi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}).WithContext(ctx))
		if err != nil {
			return waitErr(ctx, "waiting for evaluation "+short(evalID), err)
		}
		if len(ev.FailedTGAllocs) > 0 {
			return fmt.Errorf("job %q cannot be placed: %s%s", d.jobID, placementFailure(ev.FailedTGAllocs), placementHint(ev.FailedTGAllocs))
		}
		switch ev.Status {
		case "complete":
			return nil
		case "failed", "canceled", "cancelled":
			return fmt.Errorf("evaluation %s of job %q %s: %s", short(evalID), d.jobID, ev.Status, ev.StatusDescription)
		}
		index = nextIndex(index, meta.LastIndex)
		if err := d.p.pace(ctx, index); err != nil {
			return waitErr(ctx, "waiting for evaluation "+short(evalID), err)
		}
	}
}

// pace sleeps pollInterval before the next query when there is no index
// to block on: Nomad answers X-Nomad-Index 0 for a table never written
// (no allocation yet on a fresh cluster), and a query at index 0 returns
// at once.
func (p *Provider) pace(ctx context.Context, index uint64) error {
	if index > 0 {
		return nil
	}
	t := time.NewTimer(p.pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// placementFailure summarises AllocationMetric like `nomad job status`.
func placementFailure(failed map[string]*napi.AllocationMetric) string {
	var groups []string
	for g := range failed {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var parts []string
	for _, g := range groups {
		m := failed[g]
		var why []string
		for _, set := range []map[string]int{m.ConstraintFiltered, m.ClassFiltered, m.DimensionExhausted, m.ClassExhausted} {
			var keys []string
			for k := range set {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				why = append(why, fmt.Sprintf("%s on %d node(s)", k, set[k]))
			}
		}
		if m.NodesEvaluated == 0 {
			why = append(why, "no nodes were eligible for evaluation (check datacenters and node pool)")
		}
		parts = append(parts, fmt.Sprintf("group %q: %d node(s) evaluated, %d filtered, %d exhausted (%s)",
			g, m.NodesEvaluated, m.NodesFiltered, m.NodesExhausted, strings.Join(why, "; ")))
	}
	return strings.Join(parts, "; ")
}

// placementHint says what to do about the constraints Nomad adds to a job
// for its services, when they filtered the nodes.
func placementHint(failed map[string]*napi.AllocationMetric) string {
	var hints []string
	seen := map[string]bool{}
	for _, m := range failed {
		for k := range m.ConstraintFiltered {
			var h string
			switch {
			case strings.HasPrefix(k, "${attr.consul.version}"):
				h = "the Nomad clients report no Consul agent: set service_provider = \"nomad\" to use Nomad's own service discovery"
			case strings.HasPrefix(k, "${attr.nomad.service_discovery}"):
				h = "the Nomad clients disable Nomad's service discovery (client option nomad_service_discovery): enable it, or use service_provider = \"consul\""
			case strings.HasPrefix(k, "${attr.nomad.version}"):
				h = "checks of service_provider = \"nomad\" need Nomad 1.4 or later on the clients"
			}
			if h != "" && !seen[h] {
				seen[h] = true
				hints = append(hints, h)
			}
		}
	}
	if len(hints) == 0 {
		return ""
	}
	sort.Strings(hints)
	return " (" + strings.Join(hints, "; ") + ")"
}

type allocAddr struct {
	id    string
	node  string // the client node's id
	host  string
	ports map[string]int
}

// waitAllocs waits until count allocations run and returns their
// addresses, sorted by allocation name. A failed allocation is an error
// quoting the task event that explains it (see explainFailure).
func (d *Deployment) waitAllocs(ctx context.Context, count int) ([]allocAddr, error) {
	var index uint64
	for {
		stubs, meta, err := d.nomad.Jobs().Allocations(d.jobID, false, (&napi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}).WithContext(ctx))
		if err != nil {
			return nil, waitErr(ctx, fmt.Sprintf("waiting for %d running allocations", count), err)
		}
		var running []*napi.AllocationListStub
		for _, a := range stubs {
			if a.DesiredStatus != "run" {
				continue
			}
			switch a.ClientStatus {
			case napi.AllocClientStatusFailed, napi.AllocClientStatusLost:
				return nil, fmt.Errorf("allocation %s of job %q %s: %s", short(a.ID), d.jobID, a.ClientStatus, d.explainFailure(ctx, a))
			case napi.AllocClientStatusRunning:
				running = append(running, a)
			}
		}
		if len(running) >= count {
			sort.Slice(running, func(i, j int) bool { return running[i].Name < running[j].Name })
			var out []allocAddr
			for _, a := range running[:count] {
				full, _, err := d.nomad.Allocations().Info(a.ID, (&napi.QueryOptions{}).WithContext(ctx))
				if err != nil {
					return nil, fmt.Errorf("reading allocation %s: %w", short(a.ID), err)
				}
				ad, err := allocAddress(full)
				if err != nil {
					return nil, err
				}
				out = append(out, ad)
			}
			d.logf("nomad: %d allocations running", count)
			return out, nil
		}
		index = nextIndex(index, meta.LastIndex)
		if err := d.p.pace(ctx, index); err != nil {
			return nil, waitErr(ctx, fmt.Sprintf("waiting for %d running allocations", count), err)
		}
	}
}

// allocAddress reads an allocation's host address and port values from
// AllocatedResources.Shared.Ports (Nomad ≥ 0.12), else from its network.
func allocAddress(a *napi.Allocation) (allocAddr, error) {
	ad := allocAddr{id: a.ID, node: a.NodeID, ports: map[string]int{}}
	if ar := a.AllocatedResources; ar != nil {
		for _, pm := range ar.Shared.Ports {
			ad.ports[pm.Label] = pm.Value
			if ad.host == "" {
				ad.host = pm.HostIP
			}
		}
		for _, nw := range ar.Shared.Networks {
			if ad.host == "" {
				ad.host = nw.IP
			}
			for _, pt := range append(append([]napi.Port(nil), nw.DynamicPorts...), nw.ReservedPorts...) {
				if _, ok := ad.ports[pt.Label]; !ok {
					ad.ports[pt.Label] = pt.Value
				}
			}
		}
	}
	if ad.host == "" || len(ad.ports) == 0 {
		return ad, fmt.Errorf("allocation %s reports no address", short(a.ID))
	}
	return ad, nil
}

// waitDeployment waits until the job's latest deployment is successful.
func (d *Deployment) waitDeployment(ctx context.Context) error {
	var index uint64
	last := "no deployment yet"
	for {
		dep, meta, err := d.nomad.Jobs().LatestDeployment(d.jobID, (&napi.QueryOptions{WaitIndex: index, WaitTime: 5 * time.Second}).WithContext(ctx))
		if err != nil {
			return waitErr(ctx, "waiting for the deployment to be healthy (last seen: "+last+d.failingChecks(ctx)+")", err)
		}
		if dep != nil {
			last = deploymentState(dep)
		}
		if dep == nil {
			return nil // no update block: nothing to wait for
		}
		switch dep.Status {
		case "successful":
			d.logf("nomad: deployment %s successful", short(dep.ID))
			return nil
		case "failed", "cancelled", "canceled", "blocked":
			return fmt.Errorf("deployment %s of job %q %s: %s%s", short(dep.ID), d.jobID, dep.Status, dep.StatusDescription, d.failingChecks(ctx))
		}
		index = nextIndex(index, meta.LastIndex)
		if err := d.p.pace(ctx, index); err != nil {
			return waitErr(ctx, "waiting for the deployment to be healthy (last seen: "+last+d.failingChecks(ctx)+")", err)
		}
	}
}

// deploymentState summarises a deployment: "running, 1/2 healthy".
func deploymentState(dep *napi.Deployment) string {
	healthy, desired := 0, 0
	for _, st := range dep.TaskGroups {
		healthy += st.HealthyAllocs
		desired += st.DesiredTotal
	}
	return fmt.Sprintf("deployment %s %s, %d/%d allocations healthy", short(dep.ID), dep.Status, healthy, desired)
}

// gateway creates the APISIX upstream and route and waits until the
// gateway answers through the route. It returns the gateway URL.
func (d *Deployment) gateway(ctx context.Context, runID, service string, insts []consul.Instance, healthPath string) (string, error) {
	s := d.p.s
	labels := map[string]string{providers.LabelManaged: "true", providers.LabelService: service}
	addOwnerLabels(labels)
	if runID != "" {
		labels[providers.LabelRun] = runID
	}
	up := &apisix.Upstream{ID: d.objectID, Name: service, Type: "roundrobin", Labels: labels}
	if s.Discovery == "consul" {
		up.ServiceName, up.DiscoveryType = service, "consul"
	} else {
		for _, in := range insts {
			up.Nodes = append(up.Nodes, apisix.Node{Host: in.Host, Port: in.Port, Weight: 1})
		}
	}
	d.logf("apisix: creating upstream and route %s (%s)", d.objectID, s.Discovery)
	if err := d.admin.PutUpstream(ctx, up); err != nil {
		// The PUT may have been applied before the error: try to
		// delete it at teardown.
		d.upstream = true
		return "", err
	}
	d.upstream = true
	rt := &apisix.Route{ID: d.objectID, Name: service, URI: s.RouteURI, UpstreamID: d.objectID, Labels: labels,
		Methods: []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}}
	d.route = true
	if err := d.admin.PutRoute(ctx, rt); err != nil {
		return "", err
	}
	gw := s.GatewayURL + routePrefix(s.RouteURI)
	probe := gw + healthPath
	if healthPath == "" {
		probe = gw + "/"
	}
	if s.Discovery == "consul" && s.APISIXControl != "off" {
		// APISIX long-polls Consul with a per-worker cache: the route
		// may answer from one instance while the others are not known
		// yet, and a load would then hit fewer than count backends.
		want := make([]string, len(insts))
		for i, in := range insts {
			want[i] = in.Addr()
		}
		d.logf("apisix: waiting until its Consul discovery holds the %d instances of %s", len(want), service)
		if err := apisix.WaitDiscovered(ctx, nil, s.APISIXControl, service, want, d.p.pollInterval); err != nil {
			hint := ""
			if errors.Is(err, apisix.ErrNoneDiscovered) {
				// APISIX 3.9.1 started while Consul was down retries
				// after 1, 4, 16, 64, 256 s: its dump then holds none.
				hint = "; if APISIX started before Consul was up, its Consul discovery retries only after 1, 4, 16, 64 then 256 s: start Consul first, or run `apisix reload` once it is up"
			}
			return "", fmt.Errorf("%w; the control API (apisix_control, APISIX_CONTROL) must be reachable, and discovery.consul in APISIX's config.yaml must point at the same Consul (or set apisix_control = \"off\")%s", err, hint)
		}
	}
	if err := apisix.WaitRoute(ctx, nil, probe, d.p.pollInterval); err != nil {
		return "", err
	}
	d.logf("apisix: gateway answers at %s", gw)
	if err := d.checkGateway(); err != nil {
		return "", err
	}
	return gw, nil
}

// routePrefix is the part of a route uri a URL through it starts with:
// "/*" → "", "/app/*" → "/app", "/app" → "/app".
func routePrefix(uri string) string {
	return strings.TrimRight(strings.TrimSuffix(uri, "*"), "/")
}

// apisixID is a valid APISIX object id for a job.
func apisixID(jobID string) string {
	id := make([]byte, 0, len(jobID))
	for i := 0; i < len(jobID) && len(id) < 64; i++ {
		c := jobID[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			id = append(id, c)
		} else {
			id = append(id, '-')
		}
	}
	return string(id)
}

// isHTTPError reports whether Nomad answered with an error status (as
// opposed to not answering).
func isHTTPError(err error) bool {
	var ure napi.UnexpectedResponseError
	var pure *napi.UnexpectedResponseError
	return errors.As(err, &ure) || errors.As(err, &pure)
}

// isRefused reports whether nothing listened at the address: the request
// was never received, so nothing was created.
func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

func isNotFound(err error) bool {
	var ure napi.UnexpectedResponseError
	if errors.As(err, &ure) {
		return ure.StatusCode() == http.StatusNotFound
	}
	var pure *napi.UnexpectedResponseError
	if errors.As(err, &pure) {
		return pure.StatusCode() == http.StatusNotFound
	}
	return false
}

func nextIndex(prev, last uint64) uint64 {
	if last < prev {
		return 0
	}
	return last
}

func waitErr(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return fmt.Errorf("%s: %w", what, err)
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
