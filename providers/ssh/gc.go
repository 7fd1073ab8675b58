package ssh

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/benchflow/benchflow/engine/tune"
	"github.com/benchflow/benchflow/providers"
)

// hostRecord names a host a run used, so gc can reach it without the
// pipeline: one file per host (and settings) in the state folder's
// ssh-hosts/, written before the first service starts there.
type hostRecord struct {
	Target target `json:"target"`
	Dir    string `json:"dir"` // the folder the run folders are made in
	file   string // the record's file; "" for a pipeline's block
}

func hostsDir() string { return filepath.Join(tune.StateDir(), "ssh-hosts") }

// recordHost writes the host's record once per provider.
func (p *Provider) recordHost() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.journal != "" {
		return nil
	}
	rec := hostRecord{Target: p.t, Dir: filepath.Dir(p.runDir)}
	rec.Target.Provider = ""
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	dir := hostsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f := filepath.Join(dir, hex.EncodeToString(sum[:8])+".json")
	if _, err := os.Stat(f); err != nil {
		tmp := f + ".tmp"
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, f); err != nil {
			return err
		}
	}
	p.journal = f
	return nil
}

// gcHosts are the hosts gc visits: those of the pipeline's ssh blocks,
// else those recorded in the state folder.
func gcHosts(req *providers.GCRequest) ([]hostRecord, error) {
	var out []hostRecord
	for _, c := range providers.ConfigsOf[Config](req.Configs) {
		t, err := c.target("")
		if err != nil {
			continue
		}
		dir := c.Dir
		if dir == "" {
			dir = DefaultDir
		}
		out = append(out, hostRecord{Target: t, Dir: dir})
	}
	if len(req.Configs) > 0 {
		return out, nil
	}
	files, err := filepath.Glob(filepath.Join(hostsDir(), "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var r hostRecord
		if json.Unmarshal(b, &r) == nil && r.Target.Address != "" {
			r.file = f
			out = append(out, r)
		}
	}
	return out, nil
}

// GC connects to each host benchflow ran services on and stops what
// crashed runs left there: service processes (marked BENCHFLOW_SERVICE)
// whose helper is gone or whose benchflow on this machine is gone, their
// per-run folders, and helpers whose benchflow on this machine is gone.
// With a run id, that run's processes and folders go whoever owns them.
// An unreachable host is reported (wrapping ErrUnavailable) and skipped.
func GC(ctx context.Context, req *providers.GCRequest) ([]string, error) {
	hosts, err := gcHosts(req)
	if err != nil {
		return nil, err
	}
	if len(hosts) == 0 {
		return nil, fmt.Errorf("%w: no ssh host configured or recorded", providers.ErrUnavailable)
	}
	var found []string
	var errs []error
	for _, h := range hosts {
		f, kept, err := gcHost(ctx, h, req)
		found = append(found, f...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// A host visited with nothing left of benchflow's and nothing of
		// a live run needs no record: the next run there makes it again.
		if h.file != "" && len(f) == 0 && !kept {
			os.Remove(h.file)
		}
	}
	return found, errors.Join(errs...)
}

// ownerGone: the controller recorded in s ran on this machine and is gone.
func ownerGone(s string) bool {
	o, ok := parseOwner(s)
	return ok && o.State() == providers.OwnerGone
}

func gcHost(ctx context.Context, h hostRecord, req *providers.GCRequest) (found []string, kept bool, err error) {
	t := h.Target
	if t.Idle == 0 {
		t.Idle = DefaultIdleTimeout
	}
	t.Provider = "gc"
	c, err := dial(ctx, t)
	if err != nil {
		return nil, false, fmt.Errorf("%w: %s@%s: %v", providers.ErrUnavailable, t.User, t.addr(), err)
	}
	defer c.close()
	r, err := c.call(ctx, &request{Op: opGC, Base: h.Dir})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", t.addr(), err)
	}
	var kill []int
	groups := map[int]bool{}
	for _, l := range r.Leftover {
		switch {
		case req.RunID != "" && l.Run != req.RunID:
			continue
		case req.RunID == "" && l.HelperAlive && !ownerGone(l.Owner):
			req.Keep(fmt.Sprintf("process %d (%s) of service %q on %s", l.PID, l.Comm, l.Service, t.Address), "its run "+l.Run+" is still running")
			kept = true
			continue
		}
		found = append(found, fmt.Sprintf("process %d (%s) of service %q, run %s, on %s", l.PID, l.Comm, l.Service, l.Run, t.addr()))
		if !groups[l.PGID] {
			groups[l.PGID] = true
			kill = append(kill, l.PGID)
		}
	}
	for _, hl := range r.Helpers {
		if req.RunID == "" && ownerGone(hl.Owner) {
			found = append(found, fmt.Sprintf("helper %d of a benchflow that is gone, on %s", hl.PID, t.addr()))
			kill = append(kill, hl.PID)
		} else if req.RunID == "" {
			kept = true // a live benchflow drives it
		}
	}
	if len(kill) > 0 {
		if _, err := c.call(ctx, &request{Op: opKill, PIDs: kill}); err != nil {
			return found, kept, fmt.Errorf("%s: %w", t.addr(), err)
		}
	}
	for _, f := range r.Folders {
		if req.RunID != "" && f.Run != req.RunID {
			continue
		}
		if req.RunID == "" && f.HelperAlive && !ownerGone(f.Owner) {
			kept = true
			continue
		}
		if _, err := c.call(ctx, &request{Op: opRemove, Path: f.Path}); err != nil {
			return found, kept, fmt.Errorf("%s: %w", t.addr(), err)
		}
		found = append(found, fmt.Sprintf("folder %s of run %s on %s", f.Path, f.Run, t.addr()))
	}
	return found, kept, nil
}
