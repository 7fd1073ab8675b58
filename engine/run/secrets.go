package run

import (
	"os"
	"strings"

	"github.com/benchflow/benchflow/engine/redact"
	"github.com/benchflow/benchflow/engine/results"
)

// redactRecord removes sensitive values and URL user-info from every
// string of a trial record that reaches manifest.json or the tables.
func redactRecord(rec *results.TrialRecord) {
	r := redact.Default
	rec.Error = r.String(rec.Error)
	for i := range rec.Steps {
		st := &rec.Steps[i]
		st.Error = r.String(st.Error)
		if res := st.Result; res != nil {
			for j, t := range res.Targets {
				res.Targets[j] = r.String(t)
			}
			for k, v := range res.ErrorSample {
				res.ErrorSample[k] = r.String(v)
			}
		}
	}
	for i := range rec.Services {
		s := &rec.Services[i]
		s.URL = r.String(s.URL)
		for k, v := range s.Attrs {
			s.Attrs[k] = r.String(v)
		}
	}
	for k, v := range rec.ServiceVersions {
		rec.ServiceVersions[k] = r.String(v)
	}
}

// dirPerm is the mode of a folder created inside dir: private (0700) when
// dir is, else 0755.
func dirPerm(dir string) os.FileMode {
	for d := dir; d != "" && d != "." && d != "/"; d = parentDir(d) {
		if fi, err := os.Stat(d); err == nil {
			if fi.Mode().Perm()&0o077 == 0 {
				return 0o700
			}
			return 0o755
		}
	}
	return 0o755
}

func parentDir(d string) string {
	i := strings.LastIndexByte(strings.TrimRight(d, "/"), '/')
	if i <= 0 {
		return ""
	}
	return d[:i]
}
