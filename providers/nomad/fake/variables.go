package fake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"

	napi "github.com/hashicorp/nomad/api"
)

// tableVariables is Nomad's variables table.
const tableVariables = "variables"

// Variable returns the variable at path in namespace ("" is "default"),
// for tests.
func (n *Nomad) Variable(namespace, path string) (*napi.Variable, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	v, ok := n.vars[nsKey(namespace, path)]
	if !ok {
		return nil, false
	}
	c := *v
	return &c, true
}

// variable serves /v1/var/:path as Nomad 1.6 does: PUT stores the
// variable (200 with it), GET answers it or 404 "variable not found",
// DELETE removes it (204, also when it is missing).
func (n *Nomad) variable(w http.ResponseWriter, r *http.Request, ns, path string) {
	if path == "" {
		httpError(w, http.StatusBadRequest, "missing variable path")
		return
	}
	switch r.Method {
	case http.MethodPut, http.MethodPost:
		var v napi.Variable
		if err := json.NewDecoder(r.Body).Decode(&v); err != nil {
			httpError(w, http.StatusBadRequest, "Failed to decode HTTP body: "+err.Error())
			return
		}
		if len(v.Items) == 0 {
			httpError(w, http.StatusBadRequest, "variable missing required Items object")
			return
		}
		if v.Namespace == "" {
			v.Namespace = ns
		}
		if v.Namespace == "" {
			v.Namespace = "default"
		}
		v.Path = path
		n.mu.Lock()
		key := nsKey(v.Namespace, path)
		now := time.Now().UnixNano()
		v.ModifyIndex, v.ModifyTime = n.writeLocked(tableVariables), now
		if old, ok := n.vars[key]; ok {
			v.CreateIndex, v.CreateTime = old.CreateIndex, old.CreateTime
		} else {
			v.CreateIndex, v.CreateTime = v.ModifyIndex, now
		}
		n.vars[key] = &v
		idx := v.ModifyIndex
		n.mu.Unlock()
		n.writeJSON(w, idx, &v)
	case http.MethodGet:
		n.query(w, r, tableVariables, func() (any, error) {
			v, ok := n.vars[nsKey(ns, path)]
			if !ok {
				return nil, errNotFound("variable not found")
			}
			return v, nil
		})
	case http.MethodDelete:
		n.mu.Lock()
		idx := n.tables[tableVariables]
		if _, ok := n.vars[nsKey(ns, path)]; ok {
			delete(n.vars, nsKey(ns, path))
			idx = n.writeLocked(tableVariables)
		}
		n.mu.Unlock()
		w.Header().Set("X-Nomad-Index", strconv.FormatUint(idx, 10))
		w.WriteHeader(http.StatusNoContent)
	default:
		httpError(w, http.StatusMethodNotAllowed, "Invalid method")
	}
}

// listVariables serves GET /v1/vars?prefix=: the variables' metadata,
// without their items, sorted by path.
func (n *Nomad) listVariables(w http.ResponseWriter, r *http.Request, ns string) {
	prefix := r.URL.Query().Get("prefix")
	n.query(w, r, tableVariables, func() (any, error) {
		out := []*napi.VariableMetadata{}
		for _, v := range n.vars {
			if (ns == "*" || nsKey(v.Namespace, "") == nsKey(ns, "")) && strings.HasPrefix(v.Path, prefix) {
				out = append(out, &napi.VariableMetadata{Namespace: v.Namespace, Path: v.Path,
					CreateIndex: v.CreateIndex, ModifyIndex: v.ModifyIndex, CreateTime: v.CreateTime, ModifyTime: v.ModifyTime})
			}
		}
		sort.Slice(out, func(a, b int) bool { return out[a].Path < out[b].Path })
		return out, nil
	})
}

// varItem is one item of a nomadVar, as consul-template gives it: .Key,
// .Value, and the value when printed.
type varItem struct{ Key, Value string }

func (i varItem) String() string { return i.Value }

// taskEnvTemplates renders t's templates with env = true into environment
// variables, as Nomad's template runner does before the task starts: the
// functions are consul-template's env, nomadVar (the task reads only the
// variables its workload identity allows: nomad/jobs/<job>, .../<group>,
// .../<group>/<task>, in the job's namespace; its items print as their
// values and have .Key and .Value) and toJSON; the rendered
// text is KEY=VALUE lines, VALUE possibly double-quoted. A nomadVar that
// does not exist (or that the task may not read) fails the task, where
// real Nomad would keep it pending ("Missing: nomad.var.block(...)").
// Templates without env are not rendered (the fake writes no files).
func (n *Nomad) taskEnvTemplatesLocked(fa *fakeAlloc, t *napi.Task, env map[string]string) error {
	ns := fa.a.Namespace
	if ns == "" {
		ns = "default"
	}
	allowed := func(path string) bool {
		base := "nomad/jobs/" + fa.a.JobID
		return path == base || path == base+"/"+fa.a.TaskGroup || path == base+"/"+fa.a.TaskGroup+"/"+t.Name
	}
	for _, tmpl := range t.Templates {
		if tmpl.Envvars == nil || !*tmpl.Envvars || tmpl.EmbeddedTmpl == nil {
			continue
		}
		funcs := template.FuncMap{
			"env": func(k string) string { return env[k] },
			"nomadVar": func(path string) (map[string]varItem, error) {
				v, ok := n.vars[nsKey(ns, path)]
				if !ok || !allowed(path) {
					return nil, fmt.Errorf("Missing: nomad.var.block(%s@%s.global)", path, ns)
				}
				items := map[string]varItem{}
				for k, x := range v.Items {
					items[k] = varItem{Key: k, Value: x}
				}
				return items, nil
			},
			"toJSON": func(v any) (string, error) {
				b, err := json.Marshal(v)
				return string(b), err
			},
		}
		tp, err := template.New("tmpl").Funcs(funcs).Option("missingkey=zero").Parse(*tmpl.EmbeddedTmpl)
		if err != nil {
			return fmt.Errorf("Template failed: %v", err)
		}
		var b strings.Builder
		if err := tp.Execute(&b, nil); err != nil {
			return fmt.Errorf("Template failed: %v", err)
		}
		for _, line := range strings.Split(b.String(), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return fmt.Errorf("Template failed to read environment variables: line %q has no '='", line)
			}
			if strings.HasPrefix(v, `"`) {
				u, err := strconv.Unquote(v)
				if err != nil {
					return fmt.Errorf("Template failed to read environment variables: %q: %v", line, err)
				}
				v = u
			}
			env[strings.TrimSpace(k)] = v
		}
	}
	return nil
}
