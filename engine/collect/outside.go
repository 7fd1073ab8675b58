package collect

import "strings"

// OutsideRunSuffix follows the name of a process a name matched that is
// not the run's, where processes are listed by name (the progress line's
// CPU, the report's process figures): "nginx (not the run's)", never
// added to the run's nginx.
const OutsideRunSuffix = " (not the run's)"

// A collect step's `processes` choose processes by name, and a name is
// not a relation: another user's nginx matches "nginx" as well as the
// run's. Each process a name matched is tied to the run by relation, as
// the whole-machine accounting ties the rest (docs/collect.md, "Whose
// process is it"), and marked when it is not the run's: its rows carry
// results.ProcessSample.OutsideRun, and while the run has services of its
// own the budget counts it as another's, not as the service.

// outsideRun reports whether a process a name matched (pid, with its
// stat and container) is not the run's (and notes it in s.outsideNow for
// this pass's budget): no provider reported it, it
// descends from no process a provider reported nor from benchflow, and it
// runs in none of their containers or PID namespaces. A process once tied
// to the run stays the run's for its life.
func (s *Sampler) outsideRun(pid int, st procStat, container string) bool {
	if start, ok := s.ofRunNamed[pid]; ok && start == st.starttime {
		return false
	}
	if !s.tiedToRun(pid, st.ppid, container) {
		if s.outsideNow == nil {
			s.outsideNow = map[int]bool{}
		}
		s.outsideNow[pid] = true
		return true
	}
	if s.ofRunNamed == nil {
		s.ofRunNamed = map[int]uint64{}
	}
	s.ofRunNamed[pid] = st.starttime
	return false
}

// tiedToRun: by lineage (an ancestor is benchflow or a process a provider
// reported), then by container, then by PID namespace.
func (s *Sampler) tiedToRun(pid, ppid int, container string) bool {
	for p, hops := ppid, 0; p > 1 && hops < 64; hops++ {
		if p == s.self {
			return true
		}
		if tg, ok := s.tgt[p]; ok && runRole(tg.role) {
			return true
		}
		b, err := s.rd.read(pidPath(p, "stat"))
		if err != nil {
			return false
		}
		st, err := parseStat(b)
		if err != nil {
			return false
		}
		p = st.ppid
	}
	conts, nss, self := s.runGroups()
	if container != "" && container != self {
		if conts[container] {
			return true
		}
		if _, id, ok := strings.Cut(container, ":"); ok && s.m != nil && s.runIDs()[id] {
			return true
		}
	}
	if len(nss) > 0 {
		if ns := pidNamespace(pid); ns != "" && nss[ns] {
			return true
		}
	}
	return false
}

// runGroups are the containers and PID namespaces of the processes the
// providers reported (those the machine accounting noted over the load,
// or this pass's), and benchflow's own container (never the run's).
func (s *Sampler) runGroups() (conts, nss map[string]bool, selfCont string) {
	conts, nss = map[string]bool{}, map[string]bool{}
	if m := s.m; m != nil && m.runCont != nil {
		for c := range m.runCont {
			conts[c] = true
		}
		for ns := range m.runNS {
			nss[ns] = true
		}
		selfCont = m.selfCont
	}
	selfNS := pidNamespace(s.self)
	for pid, tg := range s.tgt {
		if !runRole(tg.role) {
			continue
		}
		if ps := s.procs[pid]; ps != nil && ps.container != "" {
			conts[ps.container] = true
		}
		if ns := pidNamespace(pid); ns != "" && ns != selfNS {
			nss[ns] = true
		}
	}
	return conts, nss, selfCont
}

// runHasService reports whether a provider reported a service process of
// the run (this pass, or at any pass of the machine accounting): then a
// process a name matched that is not the run's is another's, not the
// server. Without one (a study that only watches a server it did not
// start) the name is all there is, and it counts as the service.
func (s *Sampler) runHasService() bool {
	for _, tg := range s.tgt {
		if tg.role == RoleService {
			return true
		}
	}
	return s.m != nil && len(s.m.runParents) > 0
}
