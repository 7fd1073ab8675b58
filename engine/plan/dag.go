package plan

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/benchflow/benchflow/engine/diag"
	"github.com/benchflow/benchflow/engine/pipeline"
	"github.com/benchflow/benchflow/engine/steps"
)

// StepNode is a step in the DAG.
type StepNode struct {
	Step *pipeline.Step
	// Deps are the addresses ("tune.kernel") this step waits for: its
	// explicit dependencies (references, depends_on) and the implicit
	// phase order provision → tune → check/exec → warm → load, with warm
	// and load steps run one at a time in declaration order.
	Deps []string
	// Explicit marks which of Deps came from the pipeline text.
	Explicit map[string]bool
	// During is set for collect steps: the load or warm step they sample.
	During string
	// Level is the step's effective phase (0 provision … 4 load).
	Level int
}

// Addr returns "kind.name".
func (n *StepNode) Addr() string { return n.Step.Addr() }

// bodyTraversals returns every variable traversal in a body, with the
// attribute name it appears in (nested blocks included).
func bodyTraversals(body hcl.Body) map[string][]hcl.Traversal {
	out := map[string][]hcl.Traversal{}
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for name, a := range b.Attributes {
			out[name] = append(out[name], a.Expr.Variables()...)
		}
		for _, blk := range b.Blocks {
			walk(blk.Body)
		}
	}
	if sb, ok := body.(*hclsyntax.Body); ok {
		walk(sb)
		return out
	}
	if attrs, diags := body.JustAttributes(); !diags.HasErrors() {
		for name, a := range attrs {
			out[name] = a.Expr.Variables()
		}
	}
	return out
}

// stepRef parses step.<kind>.<name> from a traversal.
func stepRef(tr hcl.Traversal) (kind, name string, ok bool) {
	if tr.RootName() != "step" || len(tr) < 3 {
		return "", "", false
	}
	k, ok1 := tr[1].(hcl.TraverseAttr)
	n, ok2 := tr[2].(hcl.TraverseAttr)
	if !ok1 || !ok2 {
		return "", "", false
	}
	return k.Name, n.Name, true
}

// buildDAG orders a pipeline's steps: the edges the pipeline writes
// (references and depends_on), a topological order of them, each step's
// effective level, the implicit edges of the phases, and the final order.
func buildDAG(p *pipeline.Pipeline) ([]*StepNode, hcl.Diagnostics) {
	b := newDAGBuilder(p)
	for _, n := range b.nodes {
		b.explicitEdges(n)
	}
	if b.diags.HasErrors() {
		return b.nodes, b.diags
	}
	topo, done := topoSort(b.nodes, b.explicit)
	if len(topo) < len(b.nodes) {
		return b.nodes, append(b.diags, cycleDiag(b.nodes, b.explicit, done))
	}
	topoIdx := setLevels(topo, b.explicit)
	deps := dependencies(b.nodes, topo, topoIdx, b.explicit)
	return orderNodes(topo, topoIdx, deps), b.diags
}

// dagBuilder collects the explicit edges of a pipeline's steps and the
// diagnostics of the references that make them.
type dagBuilder struct {
	nodes  []*StepNode // in declaration order
	byAddr map[string]*StepNode
	addrs  []string
	// explicit maps a step to the steps it waits for, as written.
	explicit map[*StepNode][]*StepNode
	diags    hcl.Diagnostics
}

func newDAGBuilder(p *pipeline.Pipeline) *dagBuilder {
	b := &dagBuilder{byAddr: map[string]*StepNode{}, explicit: map[*StepNode][]*StepNode{}}
	for _, s := range p.Steps {
		n := &StepNode{Step: s, Explicit: map[string]bool{}}
		b.nodes = append(b.nodes, n)
		b.byAddr[s.Addr()] = n
		b.addrs = append(b.addrs, s.Addr())
	}
	return b
}

// addEdge makes to wait for from, once.
func (b *dagBuilder) addEdge(from, to *StepNode) {
	for _, e := range b.explicit[to] {
		if e == from {
			return
		}
	}
	b.explicit[to] = append(b.explicit[to], from)
	to.Explicit[from.Addr()] = true
}

// resolve finds the step tr names from step n, or reports why not.
func (b *dagBuilder) resolve(n *StepNode, tr hcl.Traversal) *StepNode {
	kind, name, ok := stepRef(tr)
	if !ok {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid step reference",
			Detail:  "A step is referred to as step.<kind>.<name>, for example step.load.main.",
			Subject: tr.SourceRange().Ptr()})
		return nil
	}
	target, ok := b.byAddr[kind+"."+name]
	if !ok {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Reference to undeclared step",
			Detail:  fmt.Sprintf("There is no step %q %q in this pipeline.%s", kind, name, diag.Suggest(kind+"."+name, b.addrs)),
			Subject: tr.SourceRange().Ptr()})
		return nil
	}
	if target == n {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Self-referencing step",
			Detail: fmt.Sprintf("Step %s refers to itself.", n.Addr()), Subject: tr.SourceRange().Ptr()})
		return nil
	}
	return target
}

// explicitEdges adds the edges step n writes: its step.* references (a
// collect step's during names the step it samples instead) and its
// depends_on list.
func (b *dagBuilder) explicitEdges(n *StepNode) {
	refs := bodyTraversals(n.Step.Body)
	attrNames := make([]string, 0, len(refs))
	for k := range refs {
		attrNames = append(attrNames, k)
	}
	sort.Strings(attrNames)
	for _, attr := range attrNames {
		for _, tr := range refs[attr] {
			if tr.RootName() != "step" {
				continue
			}
			target := b.resolve(n, tr)
			if target == nil {
				continue
			}
			if steps.BehaviourOf(n.Step.Kind).During && attr == "during" {
				b.during(n, target, tr)
				continue
			}
			b.addEdge(target, n)
		}
	}
	b.dependsOn(n)
	if steps.BehaviourOf(n.Step.Kind).During && n.During == "" && len(refs["during"]) == 0 && !hasAttr(n.Step.Body, "during") {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing collect target",
			Detail:  `A collect step needs during = step.load.<name>: the load it samples.`,
			Subject: n.Step.DeclRange.Ptr()})
	}
}

// during records the load or warm step collect step n samples.
func (b *dagBuilder) during(n, target *StepNode, tr hcl.Traversal) {
	if !steps.BehaviourOf(target.Step.Kind).Drives {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid collect target",
			Detail:  fmt.Sprintf("A collect step runs during a load or warm step; %s is a %s step.", target.Addr(), target.Step.Kind),
			Subject: tr.SourceRange().Ptr()})
		return
	}
	n.During = target.Addr()
}

// dependsOn adds the edges of step n's depends_on list.
func (b *dagBuilder) dependsOn(n *StepNode) {
	sb, ok := n.Step.Body.(*hclsyntax.Body)
	if !ok {
		return
	}
	a, ok := sb.Attributes["depends_on"]
	if !ok {
		return
	}
	exprs, d := hcl.ExprList(a.Expr)
	if d.HasErrors() {
		b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on",
			Detail: "depends_on is a list of step references, like [step.tune.kernel].", Subject: a.Expr.Range().Ptr()})
	}
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() {
			b.diags = append(b.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid depends_on",
				Detail: "Each depends_on entry must be a plain reference like step.tune.kernel, not an expression.", Subject: e.Range().Ptr()})
			continue
		}
		if tr.RootName() == "service" {
			continue // services are provisioned before steps anyway
		}
		if target := b.resolve(n, tr); target != nil {
			b.addEdge(target, n)
		}
	}
}

// topoSort orders nodes by their explicit edges with Kahn's algorithm,
// taking the ready step declared first each time (a heap of declaration
// indexes keeps it linear-logarithmic). The nodes it leaves out (not in
// done) are on a cycle.
func topoSort(nodes []*StepNode, explicit map[*StepNode][]*StepNode) (topo []*StepNode, done map[*StepNode]bool) {
	indeg := map[*StepNode]int{}
	succ := map[*StepNode][]*StepNode{}
	for _, n := range nodes {
		for _, d := range explicit[n] {
			indeg[n]++
			succ[d] = append(succ[d], n)
		}
	}
	done = map[*StepNode]bool{}
	declIdx := make(map[*StepNode]int, len(nodes))
	ready := &intHeap{}
	for i, n := range nodes {
		declIdx[n] = i
		if indeg[n] == 0 {
			heap.Push(ready, i)
		}
	}
	for ready.Len() > 0 {
		n := nodes[heap.Pop(ready).(int)]
		done[n] = true
		topo = append(topo, n)
		for _, s := range succ[n] {
			if indeg[s]--; indeg[s] == 0 {
				heap.Push(ready, declIdx[s])
			}
		}
	}
	return topo, done
}

// setLevels sets each step's effective level: its kind's phase, or the
// level of what it explicitly waits for when that is higher. It returns
// each step's index in topo.
func setLevels(topo []*StepNode, explicit map[*StepNode][]*StepNode) map[*StepNode]int {
	topoIdx := map[*StepNode]int{}
	for i, n := range topo {
		topoIdx[n] = i
		n.Level = steps.Lookup(n.Step.Kind).Phase
		for _, d := range explicit[n] {
			if d.Level > n.Level {
				n.Level = d.Level
			}
		}
	}
	return topoIdx
}

// dependencies are the steps each step waits for: its explicit edges,
// every step of the nearest lower level that has steps (collect steps
// aside: they run during their load), and, for warm and load steps, the
// one before them, since they never overlap.
func dependencies(nodes, topo []*StepNode, topoIdx map[*StepNode]int, explicit map[*StepNode][]*StepNode) map[*StepNode]map[*StepNode]bool {
	sequenced := func(n *StepNode) bool { return !steps.BehaviourOf(n.Step.Kind).During }
	deps := map[*StepNode]map[*StepNode]bool{}
	for _, n := range nodes {
		deps[n] = map[*StepNode]bool{}
		for _, d := range explicit[n] {
			deps[n][d] = true
		}
	}
	// Implicit edges from the nearest lower level that has steps.
	byLevel := map[int][]*StepNode{}
	var levels []int
	for _, m := range nodes {
		if sequenced(m) {
			if byLevel[m.Level] == nil {
				levels = append(levels, m.Level)
			}
			byLevel[m.Level] = append(byLevel[m.Level], m)
		}
	}
	sort.Ints(levels)
	for _, n := range nodes {
		if !sequenced(n) {
			continue
		}
		i := sort.SearchInts(levels, n.Level) // first level >= n's
		if i == 0 {
			continue
		}
		for _, m := range byLevel[levels[i-1]] {
			deps[n][m] = true
		}
	}
	// Warm and load steps never overlap: chain them.
	var chain []*StepNode
	for _, n := range topo {
		if steps.BehaviourOf(n.Step.Kind).Drives {
			chain = append(chain, n)
		}
	}
	sortByLevel(chain, topoIdx)
	for i := 1; i < len(chain); i++ {
		deps[chain[i]][chain[i-1]] = true
	}
	return deps
}

// orderNodes returns the steps by (level, topological index), each with its
// Deps in that order.
func orderNodes(topo []*StepNode, topoIdx map[*StepNode]int, deps map[*StepNode]map[*StepNode]bool) []*StepNode {
	ordered := append([]*StepNode(nil), topo...)
	sortByLevel(ordered, topoIdx)
	pos := map[*StepNode]int{}
	for i, n := range ordered {
		pos[n] = i
	}
	for _, n := range ordered {
		var ds []*StepNode
		for d := range deps[n] {
			ds = append(ds, d)
		}
		sort.Slice(ds, func(i, j int) bool { return pos[ds[i]] < pos[ds[j]] })
		for _, d := range ds {
			n.Deps = append(n.Deps, d.Addr())
		}
	}
	return ordered
}

// sortByLevel sorts ns by (level, topological index).
func sortByLevel(ns []*StepNode, topoIdx map[*StepNode]int) {
	sort.SliceStable(ns, func(i, j int) bool {
		if ns[i].Level != ns[j].Level {
			return ns[i].Level < ns[j].Level
		}
		return topoIdx[ns[i]] < topoIdx[ns[j]]
	})
}

func cycleDiag(nodes []*StepNode, explicit map[*StepNode][]*StepNode, done map[*StepNode]bool) *hcl.Diagnostic {
	// Walk back from the first unsorted node (declaration order) until a
	// node repeats: that loop is the cycle.
	var start *StepNode
	for _, n := range nodes {
		if !done[n] {
			start = n
			break
		}
	}
	seenAt := map[*StepNode]int{}
	var path []*StepNode
	cur := start
	for {
		if i, ok := seenAt[cur]; ok {
			path = path[i:]
			break
		}
		seenAt[cur] = len(path)
		path = append(path, cur)
		var next *StepNode
		for _, d := range explicit[cur] {
			if !done[d] {
				next = d
				break
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	// Print the cycle starting at its first-declared member.
	first := 0
	idx := map[*StepNode]int{}
	for i, n := range nodes {
		idx[n] = i
	}
	for i := range path {
		if idx[path[i]] < idx[path[first]] {
			first = i
		}
	}
	path = append(path[first:], path[:first]...)
	// path follows "waits for" edges; print in execution direction.
	var names []string
	for i := len(path) - 1; i >= 0; i-- {
		n := path[i]
		names = append(names, fmt.Sprintf("%s (%s:%d)", n.Addr(), n.Step.DeclRange.Filename, n.Step.DeclRange.Start.Line))
	}
	names = append(names, names[0])
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Dependency cycle between steps",
		Detail:   "These steps wait for each other: " + strings.Join(names, " → ") + ". Remove one of the references or depends_on entries.",
		Subject:  path[0].Step.DeclRange.Ptr(),
	}
}

func hasAttr(body hcl.Body, name string) bool {
	if sb, ok := body.(*hclsyntax.Body); ok {
		_, has := sb.Attributes[name]
		return has
	}
	return false
}

// intHeap is a min-heap of ints (container/heap).
type intHeap []int

func (h intHeap) Len() int           { return len(h) }
func (h intHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h intHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *intHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *intHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
